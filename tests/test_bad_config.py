"""Bad config stops the program with one line naming the key path, before any resource exists."""
from __future__ import annotations

import copy

import pytest

from serving_stack.config import ConfigError
from tools.mock_runtime import run_program
from stack_helpers import BASE_CONFIG, assert_rejected_before_any_resource, run_config


def _with(path: str, value):
    """BASE_CONFIG with the value at a dotted path (list indices as numbers) replaced."""
    config = copy.deepcopy(BASE_CONFIG)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node = config
    for part in parents:
        node = node[part]
    node[last] = value
    return config


BAD_CONFIGS = {
    "unknown top-level key": ({**BASE_CONFIG, "targetz": []}, "targetz: unknown config key; allowed: kubernetes, modelCache"),
    "unknown nested key": (_with("modelCache.sizee", "1Ti"), "modelCache.sizee: unknown key; allowed: storageClassName, size"),
    "unknown target id": (_with("targets.0.id", "vllm/agg-h100-eagle"), "targets[0].id: unknown target 'vllm/agg-h100-eagle'; allowed: vllm/agg-b200"),
    "target id wrong type": (_with("targets.0.id", 7), "targets[0].id: Input should be a valid string"),
    "targets not a list": (_with("targets", {"id": "vllm/agg-h100-mtp"}), "targets: Input should be a valid list"),
    "negative replicas": (_with("targets.0.replicas", {"agg": -1}), "targets[0].replicas.agg: Input should be greater than or equal to 0"),
    "replicas not an integer": (_with("targets.0.replicas", {"agg": "two"}), "targets[0].replicas.agg: Input should be a valid integer"),
    "replicas of an unknown component": (_with("targets.0.replicas", {"VllmDecodeWorker": 2}), "targets[0].replicas.VllmDecodeWorker: no such component; allowed: Frontend, agg"),
    "disaggregated without prefill": (
        _with("targets", [{"id": "vllm/disagg-h200-mtp", "replicas": {"VllmPrefillWorker": 0}}]),
        "targets[0].replicas.VllmPrefillWorker: a disaggregated target needs a prefill/decode pair, got 0 prefill replicas",
    ),
    "disaggregated without decode": (
        _with("targets", [{"id": "vllm/disagg-h100-dflash", "replicas": {"VllmDecodeWorker": 0}}]),
        "targets[0].replicas.VllmDecodeWorker: a disaggregated target needs a prefill/decode pair, got 0 decode",
    ),
    "same target twice": (_with("targets", [{"id": "vllm/agg-h100-mtp"}, {"id": "vllm/agg-h100-mtp"}]), "targets[1].id: target 'vllm/agg-h100-mtp' is selected twice"),
    "draft checkpoint not cached": (
        {**_with("targets", [{"id": "vllm/agg-h200-dflash"}]), "modelCache": {"storageClassName": "efs-ap", "checkpoints": {"drafts": []}}},
        "modelCache.checkpoints: target 'vllm/agg-h200-dflash' loads 'nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4-DFlash'",
    ),
    "unpinned target image": (_with("targets.0.image", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest"), "targets[0].image: must be an image pinned by a semver tag or an @sha256 digest"),
    "runtime tag not semver": (_with("dynamo", {"runtime": {"tag": "nightly"}}), "dynamo.runtime.tag: must be a semantic version"),
    "chart version not semver": (_with("dynamo", {"platform": {"chartVersion": "latest"}}), "dynamo.platform.chartVersion: must be a semantic version"),
    "namespace not a DNS label": (_with("kubernetes.namespace", "Nemotron_Prod"), "kubernetes.namespace: must be a DNS label"),
    "cache size not a quantity": (_with("modelCache.size", "300 gigs"), "modelCache.size: must be a storage size such as 300Gi"),
    "missing storage class": (_with("modelCache", {"size": "300Gi"}), "modelCache.storageClassName: Field required"),
    "cluster source unknown": (_with("kubernetes.cluster.source", "gke"), "kubernetes.cluster.source: Input should be 'kubeconfig' or 'eks'"),
    "draft repo not a repo id": (_with("modelCache", {"storageClassName": "x", "checkpoints": {"drafts": ["DSpark"]}}), "modelCache.checkpoints.drafts[0]: must be a Hugging Face repo id"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_is_rejected_before_any_resource(case):
    assert_rejected_before_any_resource(*BAD_CONFIGS[case])


def test_hf_token_in_plain_text_is_rejected():
    from stack_helpers import PROJECT
    import json

    config = {f"{PROJECT}:{k}": json.dumps(v) for k, v in BASE_CONFIG.items()}
    config[f"{PROJECT}:hfToken"] = "hf_plaintext"
    with pytest.raises(ConfigError, match=r"^hfToken: must be a Pulumi secret; allowed: pulumi config set --secret hfToken"):
        run_program(config, secret_keys=[])
    assert run_program.last_monitor.recorded == []


def test_good_config_registers_resources():
    """The same harness does register resources when the config is fine (so the checks above mean something)."""
    run = run_config(BASE_CONFIG)
    assert len(run.resources) > 5
