"""Values of the wrong type or size: lax coercion into counts and booleans, empty and huge values, and
quantities out of bounds (the PVC below the checkpoints it must hold, from catalog/checkpoints.yaml).

`CASES` is one table of bad values, each with the key the refusal must name, run by one test against one
rendered project."""

from __future__ import annotations

import math

import pytest
from bad_stack_helpers import (
    ECHO_LIMIT,
    Raw,
    ThrowawayProject,
    assert_refused,
    config_value,
    edited,
    longest_run,
)

from serving_stack.config.types import quantity_value
from serving_stack.facts.catalog import load_catalog, load_checkpoint_sizes

TARGET = config_value("dev", "targets[0].id")
WORKER = load_catalog().recipe(TARGET).worker_components()[0]["name"]
REPLICAS = f"targets[0].replicas.{WORKER}"
SIZES = load_checkpoint_sizes()
DEV_CHECKPOINTS = [
    config_value("dev", "modelCache.checkpoints.base"),
    *config_value("dev", "modelCache.checkpoints.drafts"),
]
BENCH_SCHEDULE = "operability.benchmark.schedule"
PROD_TARGET = config_value("prod", "targets[0].id")
AUTOSCALING = {"autoscaling.targets": {PROD_TARGET: {"minReplicaSets": 1, "maxReplicaSets": 4}}}
DEV_NEEDED_GIB = sum(SIZES.size(r).bytes for r in DEV_CHECKPOINTS) / 2**30
WARMED_GIB = sum(SIZES.size(r).bytes for r in load_catalog().recipe(TARGET).checkpoints) / 2**30

CASES: dict[str, tuple[str, dict, str]] = {
    # Counts take integers only: no '2', 2.0, true or null.
    "count as a string": ("dev", {REPLICAS: "2"}, REPLICAS),
    "count as a fraction": ("dev", {REPLICAS: 2.5}, REPLICAS),  # 2.0 reaches the program as 2 (Go's JSON)
    "count as a boolean": ("dev", {REPLICAS: True}, REPLICAS),
    "count as null": ("dev", {REPLICAS: None}, REPLICAS),
    "backoff limit as a string": ("dev", {"modelCache.download.backoffLimit": "3"}, "modelCache.download.backoffLimit"),
    "threads as a fraction": ("dev", {"modelCache.prewarm.threads": 8.5}, "modelCache.prewarm.threads"),
    "users as a string": ("dev", {"demand.concurrentUsers": "10"}, "demand.concurrentUsers"),
    # Booleans take booleans only: no "true", 1 or "yes".
    "boolean as the string true": ("dev", {"modelCache.retainOnDelete": "true"}, "modelCache.retainOnDelete"),
    "boolean as 1": ("dev", {"modelCache.retainOnDelete": 1}, "modelCache.retainOnDelete"),
    "boolean as the string yes": ("dev", {"monitoring.enabled": "yes"}, "monitoring.enabled"),
    "boolean as 0": ("dev", {"dynamo.platform.install": 0}, "dynamo.platform.install"),
    "boolean as null": ("dev", {"modelCache.prewarm.enabled": None}, "modelCache.prewarm.enabled"),
    # Empty values.
    "empty namespace": ("dev", {"kubernetes.namespace": ""}, "kubernetes.namespace"),
    "empty target id": ("dev", {"targets[0].id": ""}, "targets[0].id"),
    "empty storage class": ("dev", {"modelCache.storageClassName": ""}, "modelCache.storageClassName"),
    "empty kubeconfig context": ("dev", {"kubernetes.cluster.context": ""}, "kubernetes.cluster.context"),
    "empty base checkpoint": ("dev", {"modelCache.checkpoints.base": ""}, "modelCache.checkpoints.base"),
    "empty cluster name": ("prod", {"aws.cluster.create.name": ""}, "aws.cluster.create.name"),
    # Huge values: each error line echoes at most a short excerpt.
    "300-character cluster name": ("prod", {"aws.cluster.create.name": "c" * 300}, "aws.cluster.create.name"),
    "300-character endpoint name": ("prod", {"sagemaker.endpoints[0].name": "e" * 300}, "sagemaker.endpoints[0].name"),
    "300-character target id": ("dev", {"targets[0].id": "vllm/" + "t" * 295}, "targets[0].id"),
    "250-character target id (checked against the catalog)": (
        "dev",
        {"targets[0].id": "vllm/" + "t" * 245},
        "targets[0].id",
    ),
    "200 kB storage class": ("dev", {"modelCache.storageClassName": "s" * 200_000}, "modelCache.storageClassName"),
    "200 kB namespace": ("dev", {"kubernetes.namespace": "n" * 200_000}, "kubernetes.namespace"),
    "200 kB tag value": ("prod", {"aws.tags.owner": "o" * 200_000}, "aws.tags.owner"),
    "count of 10^30": ("dev", {REPLICAS: 10**30}, REPLICAS),
    "3000 copies of one target": ("dev", {"targets": [{"id": TARGET}] * 3000}, "targets[1].id"),
    # A trailing newline: `re.match` with `$` took it (`$` matches before a final newline); the checks use
    # fullmatch. The pydantic `pattern=` fields (pydantic-core's regex, where `$` is the end) are here too.
    "namespace with a trailing newline": ("dev", {"kubernetes.namespace": "nemotron-dev\n"}, "kubernetes.namespace"),
    "target image with a trailing newline": (
        "dev",
        {"targets[0].image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0\n"},
        "targets[0].image",
    ),
    "runtime tag with a trailing newline": ("dev", {"dynamo.runtime.tag": "1.5.0\n"}, "dynamo.runtime.tag"),
    "runtime registry with a trailing newline": (
        "dev",
        {"dynamo.runtime.registry": "nvcr.io/nvidia/ai-dynamo\n"},
        "dynamo.runtime.registry",
    ),
    "pull secret with a trailing newline": ("dev", {"dynamo.imagePullSecret": "ngc\n"}, "dynamo.imagePullSecret"),
    "storage class with a trailing newline": (
        "dev",
        {"modelCache.storageClassName": "efs-ap\n"},
        "modelCache.storageClassName",
    ),
    "quantity with a trailing newline": ("dev", {"modelCache.size": "300Gi\n"}, "modelCache.size"),
    "endpoint name with a trailing newline": (
        "prod",
        {"sagemaker.endpoints[0].name": "nemotron-lightning\n"},
        "sagemaker.endpoints[0].name",
    ),
    "variant name with a trailing newline": (
        "prod",
        {"sagemaker.endpoints[0].variantName": "AllTraffic\n"},
        "sagemaker.endpoints[0].variantName",
    ),
    "Kubernetes version with a trailing newline": (
        "prod",
        {"aws.cluster.create.kubernetesVersion": "1.33\n"},
        "aws.cluster.create.kubernetesVersion",
    ),
    "principal ARN with a trailing newline (pydantic pattern)": (
        "prod",
        {"aws.cluster.create.accessEntries[0].principalArn": "arn:aws:iam::111122223333:role/nemotron-oncall\n"},
        "aws.cluster.create.accessEntries[0].principalArn",
    ),
    "image registry with a trailing newline (pydantic pattern)": (
        "dev",
        {"dynamo.registry": "nvcr.io\n"},
        "dynamo.registry",
    ),
    "EFS permissions with a trailing newline (pydantic pattern)": (
        "prod",
        {"aws.modelCacheStorage.efs.directoryPerms": "700\n"},
        "aws.modelCacheStorage.efs.directoryPerms",
    ),
    "Prometheus URL with a trailing newline": (
        "dev",
        {
            "monitoring.enabled": True,
            "monitoring.prometheus": {"install": False, "releaseLabel": "kps", "url": "http://prometheus:9090\n"},
        },
        "monitoring.prometheus.url",
    ),
    # Kubernetes int32/int64 fields and the ops settings' sensible bounds.
    "download backoffLimit over int32": (
        "dev",
        {"modelCache.download.backoffLimit": 2**31},
        "modelCache.download.backoffLimit",
    ),
    "download deadline over int64": (
        "dev",
        {"modelCache.download.activeDeadlineSeconds": 2**63},
        "modelCache.download.activeDeadlineSeconds",
    ),
    "benchmark TTL over int32": (
        "dev",
        {"operability.benchmark.ttlSecondsAfterFinished": 2**31},
        "operability.benchmark.ttlSecondsAfterFinished",
    ),
    "benchmark of 10^30 requests": (
        "dev",
        {"operability.benchmark.numRequests": 10**30},
        "operability.benchmark.numRequests",
    ),
    "KEDA polling of 10^30 s": (
        "prod",
        {**AUTOSCALING, "autoscaling.pollingIntervalSeconds": 10**30},
        "autoscaling.pollingIntervalSeconds",
    ),
    "KEDA queue depth of 10^30": (
        "prod",
        {**AUTOSCALING, "autoscaling.queueDepthPerReplica": 10**30},
        "autoscaling.queueDepthPerReplica",
    ),
    "KEDA cooldown of 10^30 s": (
        "prod",
        {**AUTOSCALING, "autoscaling.cooldownPeriodSeconds": 10**30},
        "autoscaling.cooldownPeriodSeconds",
    ),
    "HPA stabilization over Kubernetes' 3600 s": (
        "prod",
        {**AUTOSCALING, "autoscaling.scaleDownStabilizationSeconds": 3601},
        "autoscaling.scaleDownStabilizationSeconds",
    ),
    "autoscaling maxReplicaSets of 10^30": (
        "prod",
        {"autoscaling.targets": {PROD_TARGET: {"maxReplicaSets": 10**30}}},
        f"autoscaling.targets.{PROD_TARGET}.maxReplicaSets",
    ),
    # Cron schedules as Kubernetes parses them (five fields in range, or an @-macro; no TZ=).
    "schedule of words": ("dev", {BENCH_SCHEDULE: "x x x x x"}, BENCH_SCHEDULE),
    "schedule minute 99": ("dev", {BENCH_SCHEDULE: "99 3 * * 0"}, BENCH_SCHEDULE),
    "schedule weekday 7": ("dev", {BENCH_SCHEDULE: "0 3 * * 7"}, BENCH_SCHEDULE),
    "schedule month name unknown": ("dev", {BENCH_SCHEDULE: "0 3 * foo *"}, BENCH_SCHEDULE),
    "schedule with a step of 0": ("dev", {BENCH_SCHEDULE: "*/0 * * * *"}, BENCH_SCHEDULE),
    "schedule range backwards": ("dev", {BENCH_SCHEDULE: "0 3 * * 5-1"}, BENCH_SCHEDULE),
    "schedule with six fields": ("dev", {BENCH_SCHEDULE: "0 0 3 * * 0"}, BENCH_SCHEDULE),
    "schedule with TZ=": ("dev", {BENCH_SCHEDULE: "TZ=UTC 0 3 * * 0"}, BENCH_SCHEDULE),
    "schedule macro unknown": ("dev", {BENCH_SCHEDULE: "@fortnightly"}, BENCH_SCHEDULE),
    "schedule interval not a Go duration": ("dev", {BENCH_SCHEDULE: "@every 1 hour"}, BENCH_SCHEDULE),
    # Free-form values (Helm values, SLO overrides) hold only numbers JSON and Pulumi carry exactly.
    "platform values with .nan": (
        "dev",
        {"dynamo.platform.install": True, "dynamo.platform.values.operator.qps": Raw(".nan")},
        "dynamo.platform.values.operator.qps",
    ),
    "platform values with 10^30": (
        "dev",
        {"dynamo.platform.install": True, "dynamo.platform.values": {"replicas": [1, 10**30]}},
        "dynamo.platform.values",
    ),
    "Prometheus values with .inf": (
        "dev",
        {"monitoring.enabled": True, "monitoring.prometheus.values.prometheus.scale": Raw("-.inf")},
        "monitoring.prometheus.values.prometheus.scale",
    ),
    "SLO override .nan": ("prod", {"monitoring.slo.availability": Raw(".nan")}, "monitoring.slo.availability"),
    # Quantities: parsed and bounded.
    "PVC of 0": ("dev", {"modelCache.size": "0"}, "modelCache.size"),
    "PVC of one byte": ("dev", {"modelCache.size": "1"}, "modelCache.size"),
    "PVC not a quantity": ("dev", {"modelCache.size": "abc"}, "modelCache.size"),
    "PVC negative": ("dev", {"modelCache.size": "-5Gi"}, "modelCache.size"),
    "PVC above the maximum": ("dev", {"modelCache.size": "65Ti"}, "modelCache.size"),
    "PVC as a number": ("dev", {"modelCache.size": 300}, "modelCache.size"),
    "PVC below the checkpoints": ("dev", {"modelCache.size": f"{math.floor(DEV_NEEDED_GIB)}Gi"}, "modelCache.size"),
    "PVC below the checkpoints with drafts": (
        "dev",
        {
            "modelCache.checkpoints.drafts": sorted(
                {r for t in load_catalog().recipes.values() for r in t.checkpoints} - set(DEV_CHECKPOINTS)
            ),
            "modelCache.size": f"{math.ceil(DEV_NEEDED_GIB)}Gi",
        },
        "modelCache.size",
    ),
    "prewarm memory below the checkpoints": (
        "dev",
        {"modelCache.prewarm.memoryLimit": f"{math.floor(WARMED_GIB)}Gi"},
        "modelCache.prewarm.memoryLimit",
    ),
    "prewarm memory above the maximum": (
        "dev",
        {"modelCache.prewarm.memoryLimit": "3Ti"},
        "modelCache.prewarm.memoryLimit",
    ),
    "prewarm CPU of 0": ("dev", {"modelCache.prewarm.cpuLimit": "0"}, "modelCache.prewarm.cpuLimit"),
    "prewarm CPU unit unknown": ("dev", {"modelCache.prewarm.cpuLimit": Raw("2 cores")}, "modelCache.prewarm.cpuLimit"),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return ThrowawayProject(tmp_path_factory.mktemp("bad-values"))


@pytest.mark.parametrize("case", list(CASES))
def test_bad_value_is_refused(project, case):
    stack, edits, key = CASES[case]
    line = assert_refused(project, edited(stack, edits), key)
    for value in edits.values():
        if isinstance(value, str) and len(value) > ECHO_LIMIT - 10:
            assert longest_run(line, value[-1]) <= ECHO_LIMIT, line[:400]


def test_a_huge_unknown_key_is_named_without_echoing_it(project):
    line = assert_refused(project, edited("dev", {"modelCache." + "k" * 200_000: 1}), "modelCache." + "k" * 57 + "...")
    assert longest_run(line, "k") <= ECHO_LIMIT


def test_the_pvc_bound_is_the_checkpoint_sizes(project):
    """The smallest PVC that holds the checkpoints renders; the message gives it and says the sizes are
    estimates when the data says so."""
    enough = f"{math.ceil(DEV_NEEDED_GIB)}Gi"
    assert quantity_value(enough) >= sum(SIZES.size(r).bytes for r in DEV_CHECKPOINTS)
    assert project.render(edited("dev", {"modelCache.size": enough})).code == 0
    line = assert_refused(project, edited("dev", {"modelCache.size": "1Gi"}), "modelCache.size")
    assert line.endswith(f"; allowed: >= {enough}")
    estimates = sum(SIZES.size(r).estimate for r in DEV_CHECKPOINTS)
    assert (f"{estimates} of them estimates" in line) == bool(estimates)


@pytest.mark.parametrize(
    ("stack", "key", "value"),
    [
        ("prod", "sagemaker.endpoints[0].autoscaling.targetInvocationsPerInstance", Raw(".inf")),
        ("prod", "demand.budgetUsdPerHour", Raw(".inf")),
        ("prod", "demand.slo.maxTtftP50Ms", Raw(".nan")),
        ("prod", "aws.nodePools[0].rootVolumeGiB", 10**6),
    ],
)
def test_infinite_and_oversized_numbers_are_refused(project, stack, key, value):
    assert_refused(project, edited(stack, {key: value}), key)


@pytest.mark.parametrize("schedule", ["0 3 * * 0", "*/15 0-6 1,15 jan-mar MON-FRI", "30 2 ? * sun", "@weekly"])
def test_a_schedule_kubernetes_accepts_renders(project, schedule):
    assert project.render(edited("dev", {BENCH_SCHEDULE: schedule})).code == 0
