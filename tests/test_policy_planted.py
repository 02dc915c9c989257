"""Planted violations: one field of the dev/prod recording (or one stack-config key) changed per case, caught
by the expected policy and by no other (compared with the unchanged recording's violations)."""
from __future__ import annotations

import json
from typing import Any, Callable

import pytest

from nemotron.mock_runtime import run_program, stack_config
from policy.nemotron_policies.offline import evaluate
from policy_helpers import (
    CONFIG_MAP, DAEMON_SET, DGD, HF_TOKEN, JOB, components, env_value, main_container, named, new_violations, of_type,
    pod_spec, recording, worker,
)

DISAGG = "vllm-disagg-h200-dflash-dgd"
H200_PREWARM = "model-prewarm-nvidia-h200"


def set_arg(container: dict, flag: str, value: str) -> None:
    args = container["args"]
    args[args.index(flag) + 1] = value


def drop_fabric(resources: list) -> None:
    for section in ("requests", "limits"):
        del worker(resources, DISAGG, "prefill")["resources"][section]["rdma/ib"]


def writable_cache(resources: list) -> None:
    spec = pod_spec(resources, H200_PREWARM)
    next(v for v in spec["volumes"] if "persistentVolumeClaim" in v)["persistentVolumeClaim"]["readOnly"] = False
    for mount in spec["containers"][0]["volumeMounts"]:
        mount.pop("readOnly", None)


def forget_draft(resources: list) -> None:
    entry = env_value(pod_spec(resources, H200_PREWARM)["containers"][0], "PREWARM_MODELS")
    entry["value"] = ",".join(r for r in entry["value"].split(",") if not r.endswith("-DFlash"))


CASES: list[tuple[str, str, str, Callable[[list], Any]]] = [
    ("ib-request-differs-from-limit", "prod", "fabric-requests",
     lambda r: worker(r, DISAGG, "decode")["resources"]["limits"].update({"rdma/ib": "2"})),
    ("libfabric-backend-on-infiniband", "prod", "fabric-requests",
     lambda r: set_arg(worker(r, DISAGG, "prefill"), "--kv-transfer-config",
                       json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_producer",
                                   "kv_connector_extra_config": {"backends": ["LIBFABRIC"]}}))),
    ("decode-reads-synthetic-spec-config", "prod", "fabric-requests",
     lambda r: env_value(worker(r, DISAGG, "decode"), "SPECULATIVE_CONFIG")["valueFrom"]["configMapKeyRef"].update(
         key="speculative-config-synthetic")),
    ("decode-mamba-cache-mode-differs", "prod", "fabric-requests",
     lambda r: set_arg(worker(r, DISAGG, "decode"), "--mamba-cache-mode", "all")),
    ("prefill-requests-no-fabric", "prod", "fabric-requests", drop_fabric),
    ("prewarm-forgets-the-draft", "prod", "prewarm-daemonsets", forget_draft),
    ("prewarm-mounts-cache-writable", "prod", "prewarm-daemonsets", writable_cache),
    ("prewarm-daemonset-missing", "prod", "prewarm-daemonsets", lambda r: r.remove(named(r, "model-prewarm-nvidia-b200"))),
    ("download-job-asks-for-a-gpu", "prod", "gpu-resources",
     lambda r: pod_spec(r, "model-cache-download")["containers"][0].update(resources={"limits": {"nvidia.com/gpu": 1}})),
    ("agg-worker-gpu-request-differs", "prod", "gpu-resources",
     lambda r: worker(r, "vllm-agg-b200-mtp-dgd", "agg")["resources"]["limits"].update({"nvidia.com/gpu": "2"})),
    ("agg-worker-without-gpu-toleration", "dev", "gpu-resources",
     lambda r: components(r, "vllm-agg-h100-mtp-dgd")["agg"]["podTemplate"]["spec"].update(tolerations=[])),
    ("frontend-image-latest", "dev", "image-pinning",
     lambda r: main_container(components(r, "vllm-agg-h100-mtp-dgd")["frontend"]).update(
         image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest")),
    ("download-image-from-quay", "prod", "image-pinning",
     lambda r: pod_spec(r, "model-cache-download")["containers"][0].update(image="quay.io/nvidia/vllm-runtime:1.5.0")),
    ("prewarm-init-image-bare", "dev", "image-pinning",
     lambda r: pod_spec(r, "model-prewarm-nvidia-h100-80gb-hbm3")["initContainers"][0].update(image="python")),
    ("worker-env-hf-token-literal", "prod", "secret-handling",
     lambda r: worker(r, "vllm-agg-h200-dspark-dgd", "agg")["env"].append({"name": "HF_TOKEN", "value": HF_TOKEN})),
    ("config-map-holds-a-token", "dev", "secret-handling",
     lambda r: named(r, "vllm-agg-h100-mtp-config").inputs["data"].update(notes=f"token {HF_TOKEN}")),
    ("helm-value-holds-a-token", "prod", "secret-handling",
     lambda r: named(r, "dynamo-release").inputs["values"].update(hfToken="abc123")),
    ("cache-pvc-not-retained", "prod", "data-protection",
     lambda r: setattr(named(r, "model-cache-pvc"), "retain_on_delete", False)),
    ("download-job-privileged", "prod", "least-privilege",
     lambda r: pod_spec(r, "model-cache-download")["containers"][0]["securityContext"].update(privileged=True)),
    ("worker-host-network", "dev", "least-privilege",
     lambda r: components(r, "vllm-agg-h100-mtp-dgd")["agg"]["podTemplate"]["spec"].update(hostNetwork=True)),
    ("prewarm-escalates-privileges", "prod", "least-privilege",
     lambda r: pod_spec(r, H200_PREWARM)["containers"][0]["securityContext"].update(allowPrivilegeEscalation=True)),
    ("prewarm-without-requests", "prod", "resource-requests",
     lambda r: pod_spec(r, H200_PREWARM)["containers"][0].pop("resources")),
]


@pytest.mark.parametrize("stack, expected, mutation", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_planted_violation_is_caught_by_its_policy_only(stack, expected, mutation):
    resources = recording(stack)
    mutation(resources)
    caught = new_violations(stack, resources)
    assert caught, f"no policy caught the change (expected {expected})"
    assert {v.policy_name for v in caught} == {expected}, sorted((v.policy_name, v.message) for v in caught)


def config_with(stack: str, key: str, change: Callable[[Any], None]) -> tuple[dict, list]:
    config, secret_keys = stack_config(stack)
    value = json.loads(config[f"nemotron-lightning:{key}"])
    change(value)
    return {**config, f"nemotron-lightning:{key}": json.dumps(value)}, secret_keys


STACK_CONFIG_CASES = [
    ("prod-cache-not-retained", "modelCache", lambda cache: cache.update(retainOnDelete=False), "data-protection"),
    ("prod-adds-gb200-disagg-without-fabric", "targets", lambda targets: targets.append({"id": "vllm/disagg-gb200-dspark"}),
     "fabric-requests"),
]


@pytest.mark.parametrize("key, change, expected", [c[1:] for c in STACK_CONFIG_CASES], ids=[c[0] for c in STACK_CONFIG_CASES])
def test_stack_config_change_is_caught_by_its_policy_only(key, change, expected):
    """Mandatory findings only: a new target legitimately brings its frontend's advisory resource-requests."""
    resources = run_program(*config_with("prod", key, change), stack="prod").resources
    baseline = set(evaluate(recording("prod"), stack="prod"))
    caught = {v for v in evaluate(resources, stack="prod") if v not in baseline and v.mandatory}
    assert caught and {v.policy_name for v in caught} == {expected}, sorted((v.policy_name, v.message) for v in caught)


def test_the_suite_covers_every_policy():
    assert len(CASES) + len(STACK_CONFIG_CASES) >= 15
    planted = {c[2] for c in CASES}
    assert planted == {"fabric-requests", "prewarm-daemonsets", "gpu-resources", "image-pinning", "secret-handling",
                       "data-protection", "least-privilege", "resource-requests"}
    assert of_type(recording("prod"), DAEMON_SET) and of_type(recording("prod"), CONFIG_MAP) and of_type(recording("prod"), JOB)
    assert of_type(recording("dev"), DGD)
