"""Planted violations: one field of the dev/prod recording (or one stack-config key) changed per case, caught
by the expected policy and by no other (compared with the unchanged recording's violations). Cases find
their subject by role (the disaggregated target, a prewarm DaemonSet), not by name, so they keep holding
while the stacks gain pools and targets. The cases and their mutations are one table, checked together to
cover every policy."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from catalog_picks import pick
from policy_helpers import (
    CONFIG_MAP,
    HF_TOKEN,
    JOB,
    aggregated,
    components,
    disaggregated,
    env_value,
    fabric_of,
    main_container,
    new_violations,
    of_type,
    pod_spec,
    prewarm_daemon_sets,
    prewarm_env,
    recording,
    run_stack_config,
    worker,
)

from policy.nemotron_policies.offline import evaluate

pytestmark = pytest.mark.catalog_driven

PVC = "kubernetes:core/v1:PersistentVolumeClaim"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


def first(resources: list, resource_type: str) -> Any:
    return of_type(resources, resource_type)[0]


def disagg_worker(resources: list, kind: str) -> dict:
    return worker(resources, disaggregated(resources), kind)


def set_arg(container: dict, flag: str, value: str) -> None:
    args = container["args"]
    args[args.index(flag) + 1] = value


def fabric_limit_differs(resources: list) -> None:
    decode = disagg_worker(resources, "decode")
    limits = decode["resources"]["limits"]
    limits[fabric_of(decode)] = str(int(limits[fabric_of(decode)]) + 1)


def backend_of_the_other_fabric(resources: list) -> None:
    prefill = disagg_worker(resources, "prefill")
    wrong = {"kv_connector": "NixlConnector", "kv_role": "kv_producer"}
    if fabric_of(prefill) == "rdma/ib":
        wrong["kv_connector_extra_config"] = {"backends": ["LIBFABRIC"]}
    set_arg(prefill, "--kv-transfer-config", json.dumps(wrong))


def prefill_without_fabric(resources: list) -> None:
    prefill = disagg_worker(resources, "prefill")
    fabric = fabric_of(prefill)
    for section in ("requests", "limits"):
        del prefill["resources"][section][fabric]


def forget_draft(resources: list) -> None:
    entry = next(
        prewarm_env(pod_spec(resources, d.name)["containers"][0])
        for d in prewarm_daemon_sets(resources)
        if "-DFlash" in prewarm_env(pod_spec(resources, d.name)["containers"][0])["value"]
    )
    entry["value"] = ",".join(r for r in entry["value"].split(",") if not r.endswith("-DFlash"))


def prewarm_container(resources: list) -> dict:
    return pod_spec(resources, prewarm_daemon_sets(resources)[0].name)["containers"][0]


def writable_cache(resources: list) -> None:
    spec = pod_spec(resources, prewarm_daemon_sets(resources)[0].name)
    for volume in spec["volumes"]:
        volume.get("persistentVolumeClaim", {}).pop("readOnly", None)
    for mount in prewarm_container(resources)["volumeMounts"]:
        mount.pop("readOnly", None)


def unprotected_cache(resources: list) -> None:
    """Prod keeps the model cache in its FSx file system (the claim is bound to a Retain volume of it)."""
    cache = first(resources, "aws:fsx/lustreFileSystem:LustreFileSystem")
    cache.protect = cache.retain_on_delete = False


CASES: list[tuple[str, str, str, Callable[[list], Any]]] = [
    ("fabric-request-differs-from-limit", "prod", "fabric-requests", fabric_limit_differs),
    ("backend-of-the-other-fabric", "prod", "fabric-requests", backend_of_the_other_fabric),
    (
        "decode-reads-synthetic-spec-config",
        "prod",
        "fabric-requests",
        lambda r: env_value(disagg_worker(r, "decode"), "SPECULATIVE_CONFIG")["valueFrom"]["configMapKeyRef"].update(
            key="speculative-config-synthetic"
        ),
    ),
    (
        "decode-mamba-cache-mode-differs",
        "prod",
        "fabric-requests",
        lambda r: set_arg(disagg_worker(r, "decode"), "--mamba-cache-mode", "all"),
    ),
    ("prefill-requests-no-fabric", "prod", "fabric-requests", prefill_without_fabric),
    ("prewarm-forgets-the-draft", "prod", "prewarm-daemonsets", forget_draft),
    ("prewarm-mounts-cache-writable", "prod", "prewarm-daemonsets", writable_cache),
    ("prewarm-daemonset-missing", "prod", "prewarm-daemonsets", lambda r: r.remove(prewarm_daemon_sets(r)[0])),
    (
        "download-job-asks-for-a-gpu",
        "prod",
        "gpu-resources",
        lambda r: pod_spec(r, first(r, JOB).name)["containers"][0].update(resources={"limits": {"nvidia.com/gpu": 1}}),
    ),
    (
        "agg-worker-gpu-request-differs",
        "prod",
        "gpu-resources",
        lambda r: worker(r, aggregated(r), "agg")["resources"]["limits"].update({"nvidia.com/gpu": "2"}),
    ),
    (
        "agg-worker-without-gpu-toleration",
        "dev",
        "gpu-resources",
        lambda r: components(r, aggregated(r))["agg"]["podTemplate"]["spec"].update(tolerations=[]),
    ),
    (
        "frontend-image-latest",
        "dev",
        "image-pinning",
        lambda r: main_container(components(r, aggregated(r))["frontend"]).update(
            image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest"
        ),
    ),
    (
        "download-image-from-quay",
        "prod",
        "image-pinning",
        lambda r: pod_spec(r, first(r, JOB).name)["containers"][0].update(image="quay.io/nvidia/vllm-runtime:1.5.0"),
    ),
    (
        "download-init-container-bare-image",
        "dev",
        "image-pinning",
        lambda r: pod_spec(r, first(r, JOB).name).update(initContainers=[{"name": "wait", "image": "busybox"}]),
    ),
    (
        "worker-env-hf-token-literal",
        "prod",
        "secret-handling",
        lambda r: worker(r, aggregated(r), "agg")["env"].append({"name": "HF_TOKEN", "value": HF_TOKEN}),
    ),
    (
        "config-map-holds-a-token",
        "dev",
        "secret-handling",
        lambda r: first(r, CONFIG_MAP).inputs["data"].update(notes=f"token {HF_TOKEN}"),
    ),
    (
        "helm-value-holds-a-token",
        "prod",
        "secret-handling",
        lambda r: first(r, HELM_RELEASE).inputs["values"].update(hfToken="abc123"),
    ),
    ("cache-pvc-not-retained", "prod", "data-protection", unprotected_cache),
    (
        "download-job-privileged",
        "prod",
        "least-privilege",
        lambda r: pod_spec(r, first(r, JOB).name)["containers"][0]["securityContext"].update(privileged=True),
    ),
    (
        "worker-host-network",
        "dev",
        "least-privilege",
        lambda r: components(r, aggregated(r))["agg"]["podTemplate"]["spec"].update(hostNetwork=True),
    ),
    (
        "prewarm-escalates-privileges",
        "prod",
        "least-privilege",
        lambda r: prewarm_container(r)["securityContext"].update(allowPrivilegeEscalation=True),
    ),
    (
        "agg-worker-without-requests",
        "prod",
        "resource-requests",
        lambda r: worker(r, aggregated(r), "agg").pop("resources"),
    ),
    (
        "agg-worker-without-compile-cache",
        "prod",
        "compile-cache",
        lambda r: components(r, aggregated(r))["agg"].pop("compilationCache"),
    ),
]


@pytest.mark.parametrize(("stack", "expected", "mutation"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_planted_violation_is_caught_by_its_policy_only(stack, expected, mutation):
    resources = recording(stack)
    mutation(resources)
    caught = new_violations(stack, resources)
    assert caught, f"no policy caught the change (expected {expected})"
    assert {v.policy_name for v in caught} == {expected}, sorted((v.policy_name, v.message) for v in caught)


EXISTING_CLUSTER = {
    "kubernetes": {"namespace": "policy-test", "cluster": {"source": "kubeconfig", "context": "policy-test"}},
    "modelCache": {"storageClassName": "efs-ap", "retainOnDelete": True},
    "targets": [{"id": pick(disaggregated=True, fabric="ib").id}],
}
STACK_CONFIG_CASES = [
    ("prod-cache-not-retained", lambda raw: raw["modelCache"].update(retainOnDelete=False), "data-protection"),
    (
        "disagg-without-fabric",
        lambda raw: raw["targets"].append({"id": pick(disaggregated=True, fabric="none").id}),
        "fabric-requests",
    ),
]


@pytest.mark.parametrize(
    ("change", "expected"), [c[1:] for c in STACK_CONFIG_CASES], ids=[c[0] for c in STACK_CONFIG_CASES]
)
def test_stack_config_change_is_caught_by_its_policy_only(change, expected):
    """A prod stack on an existing cluster, before and after one config change. Mandatory findings only: a
    new target legitimately brings its frontend's advisory resource-requests."""
    changed = json.loads(json.dumps(EXISTING_CLUSTER))
    change(changed)
    baseline = set(evaluate(run_stack_config(EXISTING_CLUSTER, "prod"), stack="prod"))
    caught = {v for v in evaluate(run_stack_config(changed, "prod"), stack="prod") if v not in baseline and v.mandatory}
    assert not [v for v in baseline if v.mandatory]
    assert caught and {v.policy_name for v in caught} == {expected}, sorted((v.policy_name, v.message) for v in caught)


def test_the_suite_covers_every_policy():
    assert len(CASES) + len(STACK_CONFIG_CASES) >= 15
    assert {c[2] for c in CASES} == {
        "fabric-requests",
        "prewarm-daemonsets",
        "gpu-resources",
        "image-pinning",
        "secret-handling",
        "data-protection",
        "least-privilege",
        "resource-requests",
        "compile-cache",
    }
