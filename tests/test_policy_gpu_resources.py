"""gpu-resources: a container asking for GPUs sets request = limit, and only pods pinned to GPU nodes (required
affinity on the GPU product or the pool label, GPU toleration) ask for GPUs; in DGDs and built-in workloads."""

from __future__ import annotations

from typing import Any

import pytest
from catalog_picks import pick
from policy_helpers import DGD, JOB, check_resource, component, main_container, recipe
from pulumi.output import Unknown
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_NUMBER_VALUE, UNKNOWN_OBJECT_VALUE

from serving_stack.facts.catalog import load_catalog

pytestmark = pytest.mark.catalog_driven
AGGREGATED = pick(disaggregated=False, routing="single").id

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def pod(gpus: Any = (1, 1), *, selector: Any = None, tolerations: Any = (GPU_TOLERATION,), init: bool = False) -> dict:
    request, limit = gpus
    resources = {
        section: {"nvidia.com/gpu": value}
        for section, value in (("requests", request), ("limits", limit))
        if value is not None
    }
    container = {"name": "app", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "resources": resources}
    spec: dict[str, Any] = {"containers": [] if init else [container], "tolerations": list(tolerations)}
    if init:
        spec["initContainers"] = [container]
    spec["nodeSelector"] = {"nemotron.nvidia.com/pool": "h100"} if selector is None else selector
    return spec


def workload(kind: str, spec: dict) -> tuple[str, dict]:
    if kind == "Pod":
        return "kubernetes:core/v1:Pod", {"spec": spec}
    if kind == "CronJob":
        return "kubernetes:batch/v1:CronJob", {"spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}}
    group = "batch/v1" if kind == "Job" else "apps/v1"
    return f"kubernetes:{group}:{kind}", {"spec": {"template": {"spec": spec}}}


def problems(kind: str, spec: dict) -> list[str]:
    return check_resource("gpu-resources", *workload(kind, spec))


@pytest.mark.parametrize("target", sorted(load_catalog().recipes))
def test_upstream_workers_pass(target):
    assert check_resource("gpu-resources", DGD, recipe(target)[1]) == []


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod"])
def test_pinned_gpu_workloads_with_request_equal_limit_pass(kind):
    assert problems(kind, pod()) == []


def test_a_limit_alone_is_enough():
    assert problems("Deployment", pod((None, 2))) == []


@pytest.mark.parametrize("kind", ["Deployment", "Pod"])
def test_request_must_equal_limit(kind):
    assert problems(kind, pod(("1", "2"))) == [
        "container app of {} requests nvidia.com/gpu=1 but limits nvidia.com/gpu=2; set request = limit".format(
            "pod" if kind == "Pod" else "pod template"
        )
    ]


def test_a_request_needs_a_limit():
    assert problems("Job", pod((1, None))) == [
        "container app of pod template requests nvidia.com/gpu=1 without a limit; set limits.nvidia.com/gpu = requests.nvidia.com/gpu"
    ]


def test_init_containers_count():
    assert problems("Deployment", pod((1, 2), init=True))[0].startswith("container app of pod template requests")


def test_gpu_pods_must_be_pinned_to_gpu_nodes():
    message = (
        "pod template asks for nvidia.com/gpu but is not pinned to GPU nodes: it needs a required node affinity "
        "on nvidia.com/gpu.product or nemotron.nvidia.com/pool and a toleration of the nvidia.com/gpu taint"
    )
    assert problems("Job", pod(selector={})) == [message]
    assert problems("Job", pod(selector={"kubernetes.io/arch": "amd64"})) == [message]
    assert problems("Job", pod(tolerations=())) == [message]


def test_every_node_selector_term_must_pin_gpu_nodes():
    spec = pod(selector={})
    spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}
                        ]
                    },
                    {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]},
                ]
            }
        }
    }
    assert len(problems("Deployment", spec)) == 1
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].pop()
    assert problems("Deployment", spec) == []


def test_dgd_worker_without_gpu_toleration_is_reported():
    _, dgd = recipe(AGGREGATED)
    component(dgd, "worker")["podTemplate"]["spec"]["tolerations"] = []
    (found,) = check_resource("gpu-resources", DGD, dgd)
    assert found.startswith(
        f"component {component(dgd, 'worker')['name']} asks for nvidia.com/gpu but is not pinned to GPU nodes"
    )


def test_dgd_frontend_asking_for_a_gpu_is_reported():
    _, dgd = recipe(AGGREGATED)
    main_container(component(dgd, "frontend"))["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    (found,) = check_resource("gpu-resources", DGD, dgd)
    assert found.startswith(f"component {component(dgd, 'frontend')['name']} asks for nvidia.com/gpu but is not pinned")


def test_pods_without_gpus_may_run_anywhere():
    assert problems("Deployment", pod((None, None), selector={}, tolerations=())) == []
    assert check_resource("gpu-resources", JOB, {"spec": {"template": {"spec": {"containers": [{"name": "x"}]}}}}) == []


def test_unknown_values_at_preview_are_tolerated():
    assert problems("Deployment", pod((UNKNOWN_NUMBER_VALUE, 2))) == []
    assert problems("Deployment", pod((1, 1), selector=UNKNOWN_OBJECT_VALUE)) == []
    assert problems("Deployment", pod((1, 1), tolerations=[Unknown()])) == []
    assert problems("Deployment", {"containers": UNKNOWN_ARRAY_VALUE}) == []
    assert (
        check_resource("gpu-resources", DGD, {"spec": {"components": [None, {"podTemplate": UNKNOWN_OBJECT_VALUE}]}})
        == []
    )
