"""prewarm-daemonsets: every pool of model-cache workers has a DaemonSet on the same nodes, tolerating what
the workers tolerate, mounting the cache read-only and warming every checkpoint the workers load."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from catalog_picks import picks
from policy_helpers import CONFIG_MAP, DAEMON_SET, DGD, check_stack, component, recipe, resource
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_STRING_VALUE

pytestmark = pytest.mark.catalog_driven
LIMITS = {"limits": {"cpu": "2", "memory": "64Gi"}}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def worker_tolerations(r) -> list[dict]:
    return next(c for c in r.components if c["type"] == "worker")["podTemplate"]["spec"].get("tolerations", [])


# An aggregated vLLM target loading a draft, tolerating only the GPU taint: the pool a DaemonSet must cover.
MAIN = next(
    r
    for r in picks(backend="vllm", disaggregated=False, routing="single", drafts=True)
    if worker_tolerations(r) == [GPU_TOLERATION]
)
BASE, DRAFT = MAIN.checkpoints[:2]
PRODUCT = MAIN.gpu_products[0]
WORKER = component(MAIN.dgd, "worker")["name"]


def daemon_set(
    product: str = PRODUCT,
    repos: Any = f"{BASE},{DRAFT}",
    *,
    env: str = "PREWARM_MODELS",
    tolerations: Any = (GPU_TOLERATION,),
    read_only: bool = True,
    namespace: str = "ns",
    name: str = "prewarm",
    node_selector: bool = False,
) -> object:
    placement = (
        {"nodeSelector": {"nvidia.com/gpu.product": product}}
        if node_selector
        else {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "nvidia.com/gpu.product", "operator": "In", "values": [product]}
                                ]
                            }
                        ]
                    }
                }
            }
        }
    )
    spec = {
        **placement,
        "tolerations": list(tolerations),
        "containers": [
            {
                "name": "prewarm",
                "image": "docker.io/library/python:3.12-slim",
                "env": [{"name": env, "value": repos}],
                "resources": LIMITS,
                "volumeMounts": [{"name": "cache", "mountPath": "/model-cache", "readOnly": read_only}],
            }
        ],
        "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": "shared-model-cache"}}],
    }
    props = {"metadata": {"name": name, "namespace": namespace}, "spec": {"template": {"spec": spec}}}
    return resource(DAEMON_SET, props, name=name)


def target(target_id: str = MAIN.id, name: str = "target") -> list[object]:
    config_map, dgd = recipe(target_id)
    return [resource(CONFIG_MAP, config_map, name=f"{name}-config"), resource(DGD, dgd, name=name)]


def problems(*resources: object) -> list[str]:
    return [message for message, _ in check_stack("prewarm-daemonsets", list(resources))]


def test_a_daemonset_covering_the_pool_passes():
    assert problems(*target(), daemon_set()) == []


def test_the_prewarm_programs_own_env_name_counts_too():
    assert problems(*target(), daemon_set(env="PREWARM_MODELS")) == []


def test_node_selector_is_equivalent_to_a_single_value_affinity():
    assert problems(*target(), daemon_set(node_selector=True)) == []


def test_a_pool_without_daemonset_is_reported():
    (found,) = problems(*target())
    assert found == (
        f"no prewarm DaemonSet selects the nodes of workers target/{WORKER} (nodes: nvidia.com/gpu.product In "
        f"[{PRODUCT}]; checkpoints: {', '.join(sorted(MAIN.checkpoints))})"
    )


def test_a_daemonset_on_other_nodes_does_not_count():
    (found,) = problems(*target(), daemon_set(product="NVIDIA-Some-Other-GPU"))
    assert found.startswith(f"no prewarm DaemonSet selects the nodes of workers target/{WORKER}")


def test_every_checkpoint_the_workers_load_is_warmed():
    (found,) = problems(*target(), daemon_set(repos=BASE))
    assert found.endswith(f"DaemonSet prewarm does not warm {DRAFT} (env PREWARM_MODELS)")


def test_the_cache_is_mounted_read_only():
    (found,) = problems(*target(), daemon_set(read_only=False))
    assert found.endswith("DaemonSet prewarm mounts the shared-model-cache claim writable; set readOnly: true")


def test_the_daemonset_tolerates_every_worker_toleration():
    tolerant = next(
        iter(r for r in picks(disaggregated=False, routing="single") if len(worker_tolerations(r)) > 1), None
    )
    assert tolerant, "no upstream worker tolerates more than the GPU taint (GB200 workers did)"
    workers = target(tolerant.id)
    repos = ",".join(tolerant.checkpoints)
    (found,) = problems(*workers, daemon_set(product=tolerant.gpu_products[0], repos=repos))
    missing = sorted(
        (t.get("key"), t.get("operator"), t.get("value"), t.get("effect"))
        for t in worker_tolerations(tolerant)
        if t != GPU_TOLERATION
    )
    assert found.endswith(
        "DaemonSet prewarm does not tolerate "
        + ", ".join(f"{key}{'=' + value if value else ''}:{effect}" for key, _, value, effect in missing)
    )
    tolerate_all = [{"operator": "Exists"}]
    assert problems(*workers, daemon_set(product=tolerant.gpu_products[0], repos=repos, tolerations=tolerate_all)) == []


def test_the_daemonset_runs_in_the_workers_namespace():
    (found,) = problems(*target(), daemon_set(namespace="other"))
    assert "DaemonSet prewarm runs in namespace other, the workers in ns" in found


def test_trtllm_drafts_come_from_the_engine_config():
    trt = next(
        r
        for r in picks(backend="trtllm")
        if r.speculative_decoding != "none" and worker_tolerations(r) == [GPU_TOLERATION]
    )
    config_map, dgd = recipe(trt.id)
    key = next(k for k in config_map["data"] if k.endswith(".yaml"))
    engine = yaml.safe_load(config_map["data"][key])
    engine["speculative_config"]["speculative_model"] = "nvidia/Some-Draft"
    config_map["data"][key] = yaml.safe_dump(engine)
    resources = [resource(CONFIG_MAP, config_map, name="c"), resource(DGD, dgd, name="trt")]
    (found,) = problems(*resources, daemon_set(product=trt.gpu_products[0], repos=trt.checkpoints[0]))
    assert found.endswith("does not warm nvidia/Some-Draft (env PREWARM_MODELS)")
    assert (
        problems(*resources, daemon_set(product=trt.gpu_products[0], repos=f"{trt.checkpoints[0]}, nvidia/Some-Draft"))
        == []
    )


def test_workers_with_different_tolerations_are_different_pools():
    _, dgd = recipe(MAIN.id)
    other = recipe(MAIN.id)[1]
    component(other, "worker")["podTemplate"]["spec"]["tolerations"].append(
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    )
    found = problems(resource(DGD, dgd, name="a"), resource(DGD, other, name="b"), daemon_set())
    assert found == [
        f"no prewarm DaemonSet covers workers b/{WORKER} (nodes: nvidia.com/gpu.product In [{PRODUCT}]; "
        f"checkpoints: {BASE}): DaemonSet prewarm does not tolerate dedicated:NoSchedule"
    ]  # no ConfigMap: no draft


def test_frontends_need_no_prewarm():
    _, dgd = recipe(MAIN.id)
    dgd["spec"]["components"] = [component(dgd, "frontend")]
    assert problems(resource(DGD, dgd)) == []


def test_unknown_values_at_preview_are_tolerated():
    assert problems(*target(), daemon_set(repos=UNKNOWN_STRING_VALUE)) == []
    unknown_spec = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "template": {
                "spec": {
                    "affinity": UNKNOWN_STRING_VALUE,
                    "tolerations": UNKNOWN_ARRAY_VALUE,
                    "volumes": UNKNOWN_ARRAY_VALUE,
                    "containers": UNKNOWN_ARRAY_VALUE,
                }
            }
        },
    }
    assert problems(*target(), resource(DAEMON_SET, unknown_spec, name="p")) == []
    _, dgd = recipe(MAIN.id)
    component(dgd, "worker")["podTemplate"]["spec"]["affinity"] = UNKNOWN_STRING_VALUE
    assert problems(resource(DGD, dgd), resource(CONFIG_MAP, {"metadata": None, "data": UNKNOWN_STRING_VALUE})) == []
    assert (
        problems(resource(DGD, {"metadata": {"namespace": "ns"}, "spec": None}), daemon_set(tolerations=[None])) == []
    )


@pytest.mark.parametrize(
    ("limits", "missing"), [({"cpu": "2"}, "memory"), ({"memory": "64Gi"}, "cpu"), (None, "cpu or memory")]
)
def test_every_prewarm_container_sets_cpu_and_memory_limits(limits, missing):
    prewarmer = daemon_set()
    container = prewarmer.props["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": limits} if limits else {}
    found = problems(*target(), prewarmer)
    assert found == [
        f"prewarm DaemonSet prewarm: container prewarm sets no {missing} limit; page cache is charged to "
        "the reader, so an unlimited prewarmer can starve the workers on its node"
    ]


def test_a_daemonset_of_the_prewarm_component_is_a_prewarmer_without_the_env():
    """Any DaemonSet that warms (by env) or belongs to the prewarm component is held to the limits."""
    helper = {
        "metadata": {"name": "helper", "namespace": "ns"},
        "spec": {
            "template": {"spec": {"containers": [{"name": "tail", "image": "docker.io/library/python:3.12-slim"}]}}
        },
    }
    assert problems(*target(), daemon_set(), resource(DAEMON_SET, helper, name="helper")) == []
    in_component = resource(DAEMON_SET, helper, name="helper")
    in_component.urn = in_component.urn.replace(
        "::kubernetes:apps", "::nemotron:kubernetes:ModelPrewarm$kubernetes:apps"
    )
    assert problems(*target(), daemon_set(), in_component) == [
        "prewarm DaemonSet helper: container tail sets no cpu or memory limit; page cache is charged to the reader, so an "
        "unlimited prewarmer can starve the workers on its node"
    ]
