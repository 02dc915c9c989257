"""Bad config stops the program with one line naming the key path, before any resource exists."""

from __future__ import annotations

import copy

import pytest
from catalog_picks import pick, picks
from stack_helpers import BASE_CONFIG, BASE_TARGET, assert_rejected_before_any_resource, run_config

from serving_stack.config import ConfigError
from serving_stack.facts.catalog import load_catalog
from tools.mock_runtime import run_program

pytestmark = pytest.mark.catalog_driven
CATALOG = load_catalog()
BASE = CATALOG.recipe(BASE_TARGET)
WORKER = BASE.worker_components()[0]["name"]
DISAGGREGATED = pick(disaggregated=True)
PREFILL, DECODE = (
    next(c["name"] for c in DISAGGREGATED.components if c["type"] == role) for role in ("prefill", "decode")
)
# A target that loads a draft beside the first download Job's base, so `drafts: []` leaves the draft out.
WITH_DRAFT = next(iter(r for r in picks(drafts=True) if r.checkpoints[0] == CATALOG.model_cache.jobs[0].repos[0]), None)


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
    "unknown top-level key": (
        {**BASE_CONFIG, "targetz": []},
        "targetz: unknown config key; allowed: kubernetes, modelCache",
    ),
    "unknown nested key": (
        _with("modelCache.sizee", "1Ti"),
        "modelCache.sizee: unknown key; allowed: storageClassName, size",
    ),
    "unknown target id": (
        _with("targets.0.id", "vllm/agg-h100-eagle"),
        "targets[0].id: unknown target 'vllm/agg-h100-eagle'; allowed: " + ", ".join(CATALOG.recipes),
    ),
    "target id wrong type": (_with("targets.0.id", 7), "targets[0].id: Input should be a valid string"),
    "targets not a list": (
        _with("targets", {"id": BASE_TARGET}),
        "targets: must be a list of targets",
    ),
    "negative replicas": (
        _with("targets.0.replicas", {WORKER: -1}),
        f"targets[0].replicas.{WORKER}: Input should be greater than or equal to 0",
    ),
    "replicas not an integer": (
        _with("targets.0.replicas", {WORKER: "two"}),
        f"targets[0].replicas.{WORKER}: Input should be a valid integer",
    ),
    "replicas of an unknown component": (
        _with("targets.0.replicas", {"NoSuchWorker": 2}),
        "targets[0].replicas.NoSuchWorker: no such component; allowed: " + ", ".join(BASE.component_names),
    ),
    "disaggregated without prefill": (
        _with("targets", [{"id": DISAGGREGATED.id, "replicas": {PREFILL: 0}}]),
        f"targets[0].replicas.{PREFILL}: a disaggregated target needs a prefill/decode pair, got 0 prefill replicas",
    ),
    "disaggregated without decode": (
        _with("targets", [{"id": DISAGGREGATED.id, "replicas": {DECODE: 0}}]),
        f"targets[0].replicas.{DECODE}: a disaggregated target needs a prefill/decode pair, got 0 decode",
    ),
    "same target twice": (
        _with("targets", [{"id": BASE_TARGET}, {"id": BASE_TARGET}]),
        f"targets[1].id: target '{BASE_TARGET}' is selected twice",
    ),
    "draft checkpoint not cached": (
        {
            **_with("targets", [{"id": WITH_DRAFT.id}]),
            "modelCache": {"storageClassName": "efs-ap", "checkpoints": {"drafts": []}},
        },
        f"modelCache.checkpoints: target '{WITH_DRAFT.id}' loads '{WITH_DRAFT.checkpoints[1]}'",
    )
    if WITH_DRAFT
    else ({}, "the catalog has no target with a draft beside the first download Job's base"),
    "unpinned target image": (
        _with("targets.0.image", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest"),
        "targets[0].image: must be an image with a semver tag, the runtime version the Dynamo operator admits it by",
    ),
    "runtime tag not semver": (
        _with("dynamo", {"runtime": {"tag": "nightly"}}),
        "dynamo.runtime.tag: must be a semantic version",
    ),
    "chart version not semver": (
        _with("dynamo", {"platform": {"chartVersion": "latest"}}),
        "dynamo.platform.chartVersion: must be a semantic version",
    ),
    "namespace not a DNS label": (
        _with("kubernetes.namespace", "Nemotron_Prod"),
        "kubernetes.namespace: must be a DNS label",
    ),
    "cache size not a quantity": (
        _with("modelCache.size", "300 gigs"),
        "modelCache.size: must be a storage size such as 300Gi",
    ),
    "missing storage class": (_with("modelCache", {"size": "300Gi"}), "modelCache.storageClassName: Field required"),
    "download deadline too short": (
        _with("modelCache.download", {"activeDeadlineSeconds": 5}),
        "modelCache.download.activeDeadlineSeconds: Input should be greater than or equal to 60",
    ),
    "cluster source unknown": (
        _with("kubernetes.cluster.source", "gke"),
        "kubernetes.cluster.source: Input should be 'kubeconfig' or 'eks'",
    ),
    "draft repo not a repo id": (
        _with("modelCache", {"storageClassName": "x", "checkpoints": {"drafts": ["DSpark"]}}),
        "modelCache.checkpoints.drafts[0]: must be a Hugging Face repo id",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_is_rejected_before_any_resource(case):
    assert_rejected_before_any_resource(*BAD_CONFIGS[case])


def test_hf_token_in_plain_text_is_rejected():
    import json

    from stack_helpers import PROJECT

    config = {f"{PROJECT}:{k}": json.dumps(v) for k, v in BASE_CONFIG.items()}
    config[f"{PROJECT}:hfToken"] = "hf_plaintext"
    with pytest.raises(
        ConfigError, match=r"^hfToken: must be a Pulumi secret; allowed: pulumi config set --secret hfToken"
    ):
        run_program(config, secret_keys=[])
    assert run_program.last_monitor.recorded == []


def test_good_config_registers_resources():
    """The same harness does register resources when the config is fine (so the checks above mean something)."""
    run = run_config(BASE_CONFIG)
    assert len(run.resources) > 5
