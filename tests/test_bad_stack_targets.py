"""Bad serving settings: targets (ids, duplicates, components, replica ranges, disaggregated pairs, pools),
secrets in plain text, unknown keys and enums, and the SageMaker, monitoring and demand blocks. Target ids
and component names come from the catalog and the committed stacks."""

from __future__ import annotations

import json

import pytest
from bad_stack_helpers import DELETE, PROJECT, ThrowawayProject, assert_refused, committed, config_value, edited
from plan_helpers import plan_of

from serving_stack.facts.catalog import load_catalog
from tools.mock_runtime import PROJECT_DIR

CATALOG = load_catalog()
TARGET = config_value("dev", "targets[0].id")
WORKER = CATALOG.recipe(TARGET).worker_components()[0]["name"]
CACHED = {config_value("dev", "modelCache.checkpoints.base")}
DISAGG = next(r for r in CATALOG.recipes.values() if r.disaggregated and set(r.checkpoints) <= CACHED)
PREFILL, DECODE = (next(c["name"] for c in DISAGG.components if c["type"] == role) for role in ("prefill", "decode"))
PROD_PLAN = plan_of(
    {
        key.removeprefix(f"{PROJECT}:"): value
        for key, value in committed("prod")["config"].items()
        if key.startswith(f"{PROJECT}:")
    }
)
PROD_PLACED = next(t.pool for t in PROD_PLAN.serving.targets if t.selected.index == 0)
FOREIGN_POOL = next(pool.name for pool in PROD_PLAN.pools if PROD_PLACED and pool.gpu != PROD_PLACED.gpu)
E0 = "sagemaker.endpoints[0]"
ENDPOINT = config_value("prod", E0)
SNAPSHOT = PROJECT_DIR / "catalog" / "jumpstart"
JS_MODEL = json.loads((SNAPSHOT / "models_manifest.json").read_text())[0]
JS_TYPE = json.loads((SNAPSHOT / JS_MODEL["spec_key"]).read_text())["default_inference_instance_type"]
JUMPSTART = {  # an endpoint of the committed snapshot, so that `snapshotDir` is read
    "sagemaker.allowUnverifiedSpecs": True,
    "sagemaker.endpoints": [
        {
            "name": "nemotron-js",
            "source": "jumpstart",
            "jumpstart": {"modelId": JS_MODEL["model_id"], "version": JS_MODEL["version"]},
            "instanceType": JS_TYPE,
            "autoscaling": {"instanceType": JS_TYPE, "maxCapacity": 4, "targetInvocationsPerInstance": 4},
            "deployment": {"type": "ALL_AT_ONCE"},
        }
    ],
}

CASES: dict[str, tuple[str, dict, str]] = {
    # Targets.
    "unknown target id": ("dev", {"targets[0].id": TARGET + "-nope"}, "targets[0].id"),
    "target selected twice": ("dev", {"targets": [{"id": TARGET}, {"id": TARGET}]}, "targets[1].id"),
    "target without an id": ("dev", {"targets": [{"replicas": {WORKER: 1}}]}, "targets[0].id"),
    "targets not a list": ("dev", {"targets": {"id": TARGET}}, "targets"),
    "replicas of an unknown component": (
        "dev",
        {"targets[0].replicas.NoSuchWorker": 1},
        "targets[0].replicas.NoSuchWorker",
    ),
    "replicas above 64": ("dev", {f"targets[0].replicas.{WORKER}": 65}, f"targets[0].replicas.{WORKER}"),
    "replicas negative": ("dev", {f"targets[0].replicas.{WORKER}": -1}, f"targets[0].replicas.{WORKER}"),
    "disaggregated with 0 prefill": (
        "dev",
        {"targets": [{"id": DISAGG.id, "replicas": {PREFILL: 0}}]},
        f"targets[0].replicas.{PREFILL}",
    ),
    "disaggregated with 0 decode": (
        "dev",
        {"targets": [{"id": DISAGG.id, "replicas": {DECODE: 0}}]},
        f"targets[0].replicas.{DECODE}",
    ),
    "target image unpinned": (
        "dev",
        {"targets[0].image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest"},
        "targets[0].image",
    ),
    "target node pool without aws": ("dev", {"targets[0].nodePool": "h100"}, "targets[0].nodePool"),
    "target on a pool of another GPU": ("prod", {"targets[0].nodePool": FOREIGN_POOL}, "targets[0].nodePool"),
    "pull secret without the NGC key": ("dev", {"dynamo.imagePullSecret": "ngc-registry"}, "ngcApiKey"),
    "SageMaker sends a token the stack lacks": (
        "prod",
        {f"{E0}.huggingface.sendHfToken": True},
        f"{E0}.huggingface.sendHfToken",
    ),
    # Secrets are Pulumi secrets only.
    "hfToken in plain text": ("dev", {"hfToken": "hf_abcdefghijklmnopqrstuvwxyz"}, "hfToken"),
    "ngcApiKey in plain text": ("dev", {"ngcApiKey": "nvapi-abcdefghijklmnop"}, "ngcApiKey"),
    "hfToken as a plain object": ("dev", {"hfToken": {"value": "hf_abc"}}, "hfToken"),
    # An empty secret would become an empty token, master key or pull Secret.
    "hfToken an empty plain string": ("dev", {"hfToken": ""}, "hfToken"),
    "master key secure empty": ("prod", {"gatewayMasterKey": {"secure": ""}}, "gatewayMasterKey"),
    "master key secure null": ("prod", {"gatewayMasterKey": {"secure": None}}, "gatewayMasterKey"),
    "NGC key secure a number": ("dev", {"ngcApiKey": {"secure": 5}}, "ngcApiKey"),
    # Unknown keys and wrong enums.
    "unknown top-level key": ("dev", {"target": [{"id": TARGET}]}, "target"),
    "unknown key in kubernetes": ("dev", {"kubernetes.clusterr": {}}, "kubernetes.clusterr"),
    "unknown key in checkpoints": ("dev", {"modelCache.checkpoints.draft": []}, "modelCache.checkpoints.draft"),
    "unknown key in a target": ("dev", {"targets[0].replica": {WORKER: 1}}, "targets[0].replica"),
    "unknown key in the platform": ("dev", {"dynamo.platform.vaules": {}}, "dynamo.platform.vaules"),
    "cluster source unknown": ("dev", {"kubernetes.cluster.source": "gke"}, "kubernetes.cluster.source"),
    # Monitoring.
    "monitoring namespace not a DNS label": ("dev", {"monitoring.namespace": "Monitoring"}, "monitoring.namespace"),
    "existing Prometheus without a URL": (
        "dev",
        {"monitoring.enabled": True, "monitoring.prometheus.install": False},
        "monitoring.prometheus",
    ),
    "Prometheus URL not HTTP": (
        "dev",
        {
            "monitoring.enabled": True,
            "monitoring.prometheus": {"install": False, "releaseLabel": "kps", "url": "ftp://prometheus:9090"},
        },
        "monitoring.prometheus.url",
    ),
    "monitoring switch as a string": ("dev", {"monitoring.dcgmExporter": "true"}, "monitoring.dcgmExporter"),
    "empty runbook URL": ("dev", {"monitoring.runbookBaseUrl": ""}, "monitoring.runbookBaseUrl"),
    # SageMaker.
    "endpoint name with capitals": ("prod", {f"{E0}.name": "Nemotron_Lightning"}, f"{E0}.name"),
    "endpoint source unknown": ("prod", {f"{E0}.source": "bedrock"}, f"{E0}.source"),
    "endpoint with 0 instances": ("prod", {f"{E0}.initialInstanceCount": 0}, f"{E0}.initialInstanceCount"),
    "endpoint instance type unknown": ("prod", {f"{E0}.instanceType": "ml.p9.48xlarge"}, f"{E0}.instanceType"),
    "endpoint repo unknown": ("prod", {f"{E0}.huggingface.repo": "someone/some-model"}, f"{E0}.huggingface.repo"),
    "canary above 50%": ("prod", {f"{E0}.deployment": {"canarySize": 60}}, f"{E0}.deployment.canarySize"),
    "capture above 100%": (
        "prod",
        {f"{E0}.dataCapture.samplingPercentage": 101},
        f"{E0}.dataCapture.samplingPercentage",
    ),
    "autoscaling max of 0": ("prod", {f"{E0}.autoscaling.maxCapacity": 0}, f"{E0}.autoscaling.maxCapacity"),
    # Application Auto Scaling and SageMaker take int32s; the target value is bounded and finite.
    "endpoint with 10^30 instances": ("prod", {f"{E0}.initialInstanceCount": 10**30}, f"{E0}.initialInstanceCount"),
    "autoscaling max over int32": ("prod", {f"{E0}.autoscaling.maxCapacity": 2**31}, f"{E0}.autoscaling.maxCapacity"),
    "scale-in cooldown of 10^30 s": (
        "prod",
        {f"{E0}.autoscaling.scaleInCooldown": 10**30},
        f"{E0}.autoscaling.scaleInCooldown",
    ),
    "scale-out cooldown over int32": (
        "prod",
        {f"{E0}.autoscaling.scaleOutCooldown": 2**31},
        f"{E0}.autoscaling.scaleOutCooldown",
    ),
    "target invocations of 1e308": (
        "prod",
        {f"{E0}.autoscaling.targetInvocationsPerInstance": 1e308},
        f"{E0}.autoscaling.targetInvocationsPerInstance",
    ),
    "rollback alarm over 10^6 periods": (
        "prod",
        {f"{E0}.deployment.rollbackAlarms.evaluationPeriods": 10**6},
        f"{E0}.deployment.rollbackAlarms.evaluationPeriods",
    ),
    "rollback alarm period of 6e8 s": (
        "prod",
        {f"{E0}.deployment.rollbackAlarms.periodSeconds": 600_000_000},
        f"{E0}.deployment.rollbackAlarms.periodSeconds",
    ),
    "rollback latency of 10^30 ms": (
        "prod",
        {f"{E0}.deployment.rollbackAlarms.modelLatencyP99Ms": 10**30},
        f"{E0}.deployment.rollbackAlarms.modelLatencyP99Ms",
    ),
    "rollback 5xx threshold over int32": (
        "prod",
        {f"{E0}.deployment.rollbackAlarms.invocation5xxErrors": 2**31},
        f"{E0}.deployment.rollbackAlarms.invocation5xxErrors",
    ),
    "KMS key not an ARN": ("prod", {f"{E0}.kmsKeyArn": "alias/my-key"}, f"{E0}.kmsKeyArn"),
    "unknown key in an endpoint": ("prod", {f"{E0}.autoScaling": {}}, f"{E0}.autoScaling"),
    "endpoint name used twice": ("prod", {"sagemaker.endpoints": [ENDPOINT, ENDPOINT]}, "sagemaker.endpoints[1].name"),
    "huggingface endpoint without its block": ("prod", {f"{E0}.huggingface": DELETE}, f"{E0}.huggingface"),
    # The JumpStart snapshot is a directory inside the project, laid out like the content bucket.
    "snapshot directory outside the project": (
        "prod",
        {**JUMPSTART, "sagemaker.snapshotDir": "../../../etc"},
        "sagemaker.snapshotDir",
    ),
    "snapshot directory absolute": ("prod", {**JUMPSTART, "sagemaker.snapshotDir": "/etc"}, "sagemaker.snapshotDir"),
    "snapshot directory a file": (
        "prod",
        {**JUMPSTART, "sagemaker.snapshotDir": "catalog/targets.yaml"},
        "sagemaker.snapshotDir",
    ),
    "snapshot directory without a manifest": (
        "prod",
        {**JUMPSTART, "sagemaker.snapshotDir": "docs"},
        "sagemaker.snapshotDir",
    ),
    # Demand.
    "demand of 0 users": ("prod", {"demand.concurrentUsers": 0}, "demand.concurrentUsers"),
    "demand in users and requests": ("prod", {"demand.requestsPerSecond": 5.0}, "demand"),
    "demand GPU type unknown (explicit targets)": ("prod", {"demand.gpuTypes": ["H200"]}, "demand.gpuTypes"),
    # Bounds that keep the capacity solver's numbers sane (`make plan` reads the same block).
    "demand of 10^30 users": ("prod", {"demand.concurrentUsers": 10**30}, "demand.concurrentUsers"),
    "demand of 10^30 tokens": (
        "prod",
        {"demand.tokenShape": {"inputTokens": 10**30, "outputTokens": 400}},
        "demand.tokenShape.inputTokens",
    ),
    "demand of 10^9 requests/s": (
        "prod",
        {
            "demand.concurrentUsers": DELETE,
            "demand.requestsPerSecond": 1e9,
            "demand.tokenShape": {"inputTokens": 64000, "outputTokens": 400},
        },
        "demand.requestsPerSecond",
    ),
    "demand budget of 10^30 $/h": ("prod", {"demand.budgetUsdPerHour": 1e30}, "demand.budgetUsdPerHour"),
    "demand TTFT of 10^30 ms": ("prod", {"demand.slo.maxTtftP50Ms": 1e30}, "demand.slo.maxTtftP50Ms"),
    "targets: auto (planned by `make plan ... WRITE=1` now)": ("prod", {"targets": "auto"}, "targets"),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return ThrowawayProject(tmp_path_factory.mktemp("bad-targets"))


@pytest.mark.parametrize("case", list(CASES))
def test_bad_serving_setting_is_refused(project, case):
    stack, edits, key = CASES[case]
    assert_refused(project, edited(stack, edits), key)


def test_a_plain_text_secret_is_never_echoed(project):
    token = "hf_" + "s3cr3t" * 8
    line = assert_refused(project, edited("dev", {"hfToken": token}), "hfToken")
    assert "s3cr3t" not in line
