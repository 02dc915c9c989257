"""The `operability` block + the planned Dynamo targets -> the ops programs' ConfigMap and, per target, a smoke
Job, a benchmark CronJob, a canary Deployment with its PodMonitor, and the canary alerts (docs/operability-programs.md).

- Pods run non-root, read-only, without a service-account token; a digest of the programs a pod runs is on its
  template, so a changed program runs again.
- The smoke Job gates `up` only when `up` waits for the graph (`dynamo.readiness.wait`); otherwise it is not awaited
  and waits as long as the graph may take to start. No `ttlSecondsAfterFinished`: a Job the TTL controller deletes
  is drift that the next `pulumi refresh` turns into a rerun.
- A benchmark is load on a serving endpoint: a suspended CronJob unless a `schedule` makes it a regression run.
- The canary alerts fire when probes fail or the signal is lost (a stale probe, `up == 0`, or `absent(up)`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Optional

from serving_stack.config.operability import BenchmarkConfig, CanaryConfig, OperabilityConfig, SmokeTestsConfig
from serving_stack.facts.catalog import Criteria
from serving_stack.facts.monitoring import MetricsCatalog
from serving_stack.names import PART_OF_LABEL, RELEASE_LABEL
from serving_stack.plan.serving import (
    CONFIG_CHECKSUM_ANNOTATION,
    WAIT_FOR_ANNOTATION,
    PlannedTarget,
    startup_budget_seconds,
)

OPS_PROGRAM_DIR = Path(__file__).resolve().parents[2] / "ops"
PROGRAM_FILES = ("smoke.py", "canary.py", "run_benchmark.py", "benchmark_compare.py")
PROGRAM_CONFIG_MAP = "nemotron-ops-programs"
PROGRAM_MOUNT = "/opt/nemotron-ops"
PART_OF = {PART_OF_LABEL: "nemotron-ops"}


def read_programs() -> dict[str, str]:
    return {name: (OPS_PROGRAM_DIR / name).read_text() for name in PROGRAM_FILES}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def program_config_map(namespace: str, programs: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": PROGRAM_CONFIG_MAP, "namespace": namespace, "labels": dict(PART_OF)},
        "data": dict(programs),
    }


NOBODY = 65534
TARGET_LABEL = "nemotron.nvidia.com/target"
TARGET_ID_ANNOTATION = "nemotron.nvidia.com/target-id"


@dataclass(frozen=True)
class Endpoint:
    """One planned target, as the ops objects need it (all from the plan / outputs contract)."""

    target_id: str  # catalog id, e.g. vllm/agg-h200-dspark
    dgd_name: str  # also the prefix of the frontend Service, <dgd>-frontend
    served_model_name: str
    base_url: str  # OpenAI base URL with /v1 (the contract's `url`)
    gpus: int


def target_labels(app: str, endpoint: Endpoint) -> dict[str, str]:
    return {"app.kubernetes.io/name": app, TARGET_LABEL: endpoint.dgd_name, **PART_OF}


def object_metadata(name: str, namespace: str, labels: dict[str, str], endpoint: Endpoint) -> dict[str, Any]:
    if len(name) > 52:  # a CronJob's Jobs append 11 characters to a 63-character limit
        raise ValueError(f"{name!r} is longer than 52 characters")
    return {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "annotations": {TARGET_ID_ANNOTATION: endpoint.target_id},
    }


def template_metadata(labels: dict[str, str], annotations: Mapping[str, str]) -> dict[str, Any]:
    return {"labels": labels, **({"annotations": dict(annotations)} if annotations else {})}


def container_security(user: int) -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": user,
        "runAsGroup": user,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


# A root init container that may only hand a directory to the pod's user.
CHOWN_ONLY = {
    "runAsUser": 0,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]},
}


def ops_pod(containers: list[dict[str, Any]], volumes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "terminationGracePeriodSeconds": 10,
        "containers": containers,
        "volumes": [{"name": "programs", "configMap": {"name": PROGRAM_CONFIG_MAP}}, *volumes],
        **extra,
    }


def python_container(
    name: str, program: str, args: list[str], resources: dict[str, Any], image: str, user: int
) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "command": ["python3", f"{PROGRAM_MOUNT}/{program}"],
        "args": args,
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}, {"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": resources,
        "securityContext": container_security(user),
        "volumeMounts": [{"name": "programs", "mountPath": PROGRAM_MOUNT, "readOnly": True}],
    }


SMOKE_CHECKS = 5  # ops/smoke.py CHECKS (a test keeps them equal)


def smoke_test_job(
    endpoint: Endpoint,
    namespace: str,
    settings: SmokeTestsConfig,
    wait_seconds: int,
    template_annotations: Mapping[str, str],
) -> dict[str, Any]:
    """The smoke checks against the target's frontend, once it lists the model (waiting at most `wait_seconds`).
    A change of `template_annotations` (digests of what the test exercises) replaces the Job: it runs again."""
    labels = target_labels("nemotron-smoke-test", endpoint)
    args = ["--base-url", endpoint.base_url, "--model", endpoint.served_model_name]
    args += ["--wait", str(wait_seconds), "--timeout", str(settings.requestTimeoutSeconds)]
    resources = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}}
    container = python_container("smoke", "smoke.py", args, resources, settings.image, NOBODY)
    metadata = object_metadata(f"{endpoint.dgd_name}-smoke", namespace, labels, endpoint)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": settings.backoffLimit,
            # every attempt may wait for the model, then run each check to its timeout (plus a minute to start)
            "activeDeadlineSeconds": (settings.backoffLimit + 1)
            * (wait_seconds + SMOKE_CHECKS * settings.requestTimeoutSeconds + 60),
            "template": {
                "metadata": template_metadata(labels, template_annotations),
                "spec": ops_pod([container], [], restartPolicy="Never"),
            },
        },
    }


CHECKOV_SKIP_ANNOTATION = "checkov.io/skip1"
AIPERF_USER = 1000  # the runtime user of the AIPerf image (ai-dynamo/aiperf Dockerfile)
MODEL_CACHE = "/model-cache"
NEVER = "0 0 31 2 *"  # 31 February: the schedule of an on-demand CronJob, which is suspended as well
COMPONENT_TYPE_LABEL = "nvidia.com/dynamo-component-type"  # set by the Dynamo operator on every pod
DGD_NAME_LABEL = "nvidia.com/dynamo-graph-deployment-name"
# Upstream perf.yaml's AIPerf settings: a 64K-token trace takes long to load before the first request.
AIPERF_ENV = {
    "AIPERF_HTTP_CONNECTION_LIMIT": "200",
    "AIPERF_HTTP_SO_RCVTIMEO": "120",
    "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT": "3600",
    "AIPERF_DATASET_CONFIGURATION_TIMEOUT": "3600",
}


def benchmark_job(
    endpoint: Endpoint,
    namespace: str,
    settings: BenchmarkConfig,
    *,
    concurrency: int,
    claim_name: str,
    published: Mapping[str, Any],
    tolerations: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """AIPerf on the Mooncake trace at the catalog's concurrency; `published` is {performance, criteria}
    from the catalog, so the Job log ends with the comparison table (and comparison.json beside the export)."""
    labels = target_labels("nemotron-benchmark", endpoint)
    results = f"{MODEL_CACHE}/perf"
    compare = {"target": endpoint.target_id, "gpus": endpoint.gpus, **published}
    args = ["--url", endpoint.base_url.removesuffix("/v1"), "--model", endpoint.served_model_name]
    args += ["--trace", f"{MODEL_CACHE}/traces/{settings.traceFile}", "--concurrency", str(concurrency)]
    args += ["--num-requests", str(settings.numRequests), "--results-root", results, "--run-name", "$(JOB_NAME)"]
    args += ["--wait", str(settings.waitSeconds), "--compare", json.dumps(compare, sort_keys=True)]
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "8", "memory": "16Gi"}}
    main = python_container("aiperf", "run_benchmark.py", args, resources, settings.image, AIPERF_USER)
    main["env"] += [
        {"name": "JOB_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['job-name']"}}},
        {"name": "HF_HOME", "value": MODEL_CACHE},
        {"name": "HF_HUB_OFFLINE", "value": "1"},
        {"name": "HOME", "value": "/tmp"},
        *({"name": k, "value": v} for k, v in AIPERF_ENV.items()),
    ]
    main["volumeMounts"] += [{"name": "model-cache", "mountPath": MODEL_CACHE}, {"name": "tmp", "mountPath": "/tmp"}]
    make_results_dir = {
        "name": "results-dir",
        "image": settings.image,
        "command": [
            "python3",
            "-c",
            f"import os; os.makedirs('{results}', exist_ok=True); os.chown('{results}', {AIPERF_USER}, {AIPERF_USER})",
        ],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
        "securityContext": CHOWN_ONLY,
        "volumeMounts": [{"name": "model-cache", "mountPath": MODEL_CACHE}],
    }
    frontend = {
        "labelSelector": {"matchLabels": {COMPONENT_TYPE_LABEL: "frontend", DGD_NAME_LABEL: endpoint.dgd_name}},
        "topologyKey": "kubernetes.io/hostname",
    }
    pod = ops_pod(
        [main],
        [
            {"name": "model-cache", "persistentVolumeClaim": {"claimName": claim_name}},
            {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}},
        ],
        restartPolicy="Never",
        initContainers=[make_results_dir],
        tolerations=[dict(t) for t in tolerations],
        affinity={
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": frontend}]
            }
        },
    )
    metadata = object_metadata(f"{endpoint.dgd_name}-bench", namespace, labels, endpoint)
    # checkov's high-UID check: AIPerf runs as the image's own user, whose home and caches it owns.
    metadata["annotations"][CHECKOV_SKIP_ANNOTATION] = f"CKV_K8S_40=the AIPerf image runs as its own user {AIPERF_USER}"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": settings.activeDeadlineSeconds,
            "ttlSecondsAfterFinished": settings.ttlSecondsAfterFinished,
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def on_demand(job: dict[str, Any], schedule: Optional[str] = None) -> dict[str, Any]:
    """A CronJob around `job`: suspended (run with `kubectl create job --from=cronjob/...`) unless scheduled."""
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": job["metadata"],
        "spec": {
            "schedule": schedule or NEVER,
            "suspend": schedule is None,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"metadata": {"labels": job["metadata"]["labels"]}, "spec": job["spec"]},
        },
    }


CANARY_PORT = 9400


def canary_name(dgd_name: str) -> str:
    """The canary Deployment of a target; its pods are `<this>-<replicaset hash>-<pod hash>`."""
    return f"{dgd_name}-canary"


def canary_deployment(
    endpoint: Endpoint, namespace: str, settings: CanaryConfig, template_annotations: Mapping[str, str]
) -> dict[str, Any]:
    """`template_annotations`: digests of the programs it runs, so a changed program rolls the pod."""
    labels = target_labels("nemotron-canary", endpoint)
    args = ["--base-url", endpoint.base_url, "--model", endpoint.served_model_name, "--target", endpoint.target_id]
    args += ["--interval", str(settings.intervalSeconds), "--timeout", str(settings.timeoutSeconds)]
    args += ["--port", str(CANARY_PORT)]
    resources = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "96Mi"}}
    container = python_container("canary", "canary.py", args, resources, settings.image, NOBODY)
    container["ports"] = [{"name": "metrics", "containerPort": CANARY_PORT}]
    container["livenessProbe"] = {"httpGet": {"path": "/metrics", "port": "metrics"}, "periodSeconds": 30}
    # Ready once it serves its metrics: Prometheus scrapes it through the PodMonitor (checkov CKV_K8S_9).
    container["readinessProbe"] = {"httpGet": {"path": "/metrics", "port": "metrics"}, "periodSeconds": 10}
    name = canary_name(endpoint.dgd_name)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_metadata(name, namespace, labels, endpoint),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": template_metadata(labels, template_annotations), "spec": ops_pod([container], [])},
        },
    }


def canary_pod_monitor(
    deployment: dict[str, Any], settings: CanaryConfig, extra_labels: Optional[Mapping[str, str]] = None
) -> dict[str, Any]:
    """Selects the canary's pods; `extra_labels` e.g. {"release": ...} when Prometheus selects by label."""
    metadata = {**deployment["metadata"], "labels": {**deployment["metadata"]["labels"], **(extra_labels or {})}}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": metadata,
        "spec": {
            "selector": deployment["spec"]["selector"],
            "podMetricsEndpoints": [
                {"port": "metrics", "path": "/metrics", "interval": f"{settings.scrapeIntervalSeconds}s"}
            ],
        },
    }


# One late probe is a slow request or scrape; three intervals without one is a probe loop that stopped.
CANARY_STALE_INTERVALS = 3


class Alert(NamedTuple):
    name: str
    expr: str
    summary: str
    description: str


def canary_alerts(
    namespace: str, target_id: str, dgd_name: str, canary: CanaryConfig, metrics: MetricsCatalog
) -> list[Alert]:
    pods = f'namespace="{namespace}", pod=~"{canary_name(dgd_name)}-[a-z0-9]+-[a-z0-9]+"'  # <rs hash>-<pod suffix>
    success = f"{metrics.metric('canary', 'probeSuccess').name}{{{pods}}}"
    last_probe = f"{metrics.metric('canary', 'lastProbeTimestamp').name}{{{pods}}}"
    up = f"{metrics.metric('prometheus', 'up').name}{{{pods}}}"
    stale = CANARY_STALE_INTERVALS * canary.intervalSeconds
    return [
        Alert(
            "NemotronCanaryFailing",
            f"min by (namespace) ({success}) < 1",
            f"{target_id}: canary requests fail",
            f"Every canary probe of {target_id} failed while this alert was pending: the endpoint does not "
            "answer a small chat request.",
        ),
        Alert(
            "NemotronCanaryStale",
            f"(time() - max by (namespace) ({last_probe}) > {stale})"
            f" or (max by (namespace) ({up}) == 0) or absent({up})",
            f"{target_id}: no fresh canary result",
            f"The canary of {target_id} reports nothing new: its last probe is older than {stale} s "
            f"({CANARY_STALE_INTERVALS} probe intervals), Prometheus cannot scrape it (up == 0), or Prometheus has "
            "no canary target at all. Whether the endpoint serves is unknown.",
        ),
    ]


# After the graph is Ready, the frontend lists the model within seconds; ten minutes covers a worker restart.
SMOKE_WAIT_AFTER_READY_SECONDS = 600
# After activeDeadlineSeconds, the time the Job controller may take to mark the Job Failed.
JOB_DEADLINE_SLACK_MINUTES = 5
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"
DGD_DIGEST_ANNOTATION = "nemotron.nvidia.com/dgd-sha256"
SMOKE_PROGRAMS = ("smoke.py",)
CANARY_PROGRAMS = ("canary.py", "smoke.py")


@dataclass(frozen=True)
class TargetChecks:
    """One target's objects. `gated`: `up` waits for the smoke Job, at most `smoke_timeout_minutes`."""

    target_id: str
    resource_name: str
    gated: bool
    smoke_job: Mapping[str, Any]
    benchmark: Mapping[str, Any]
    canary: Mapping[str, Any]
    canary_monitor: Mapping[str, Any]

    @property
    def smoke_timeout_minutes(self) -> int:
        deadline = int(self.smoke_job["spec"]["activeDeadlineSeconds"])
        return -(-deadline // 60) + JOB_DEADLINE_SLACK_MINUTES


@dataclass(frozen=True)
class OperabilityPlan:
    """`canary_monitors`: the canaries are scraped (monitoring is on, so the PodMonitor CRD exists)."""

    program_config_map: Mapping[str, Any]
    smoke_tests: bool
    benchmarks: bool
    canaries: bool
    canary_monitors: bool
    targets: tuple[TargetChecks, ...]


def _frontend_tolerations(dgd: Mapping[str, Any]) -> list[dict[str, Any]]:
    (frontend,) = [c for c in dgd["spec"]["components"] if c["type"] == "frontend"]
    return list(frontend["podTemplate"].get("spec", {}).get("tolerations") or [])


def plan_operability(
    settings: OperabilityConfig,
    targets: Sequence[PlannedTarget],
    namespace: str,
    claim_name: str,
    criteria: Criteria,
    release_label: Optional[str],
    image_pull_seconds: int,
) -> Optional[OperabilityPlan]:
    """None when nothing is switched on or no Dynamo target is deployed. `release_label`: the label the stack's
    Prometheus selects monitors by, None without monitoring (then nothing scrapes the canaries)."""
    smoke_tests, benchmarks, canaries = (s.enabled for s in (settings.smokeTests, settings.benchmark, settings.canary))
    if not targets or not (smoke_tests or benchmarks or canaries):
        return None
    programs = read_programs()
    smoke_digest, canary_digest = (_digest({p: programs[p] for p in ps}) for ps in (SMOKE_PROGRAMS, CANARY_PROGRAMS))
    checks = []
    for target in targets:
        dgd, contract = target.dgd, target.endpoint
        endpoint = Endpoint(
            target.selected.id, dgd["metadata"]["name"], contract.servedModelName, contract.url, contract.gpus
        )
        gated = WAIT_FOR_ANNOTATION in dgd["metadata"].get("annotations", {})
        wait = settings.smokeTests.waitSeconds
        if wait is None:
            wait = SMOKE_WAIT_AFTER_READY_SECONDS if gated else startup_budget_seconds(dict(dgd)) + image_pull_seconds
        # a changed graph runs the smoke test again
        annotations = {CONFIG_CHECKSUM_ANNOTATION: smoke_digest, DGD_DIGEST_ANNOTATION: _digest(dgd)}
        smoke = smoke_test_job(endpoint, namespace, settings.smokeTests, wait, annotations)
        if not gated:
            smoke["metadata"]["annotations"][SKIP_AWAIT_ANNOTATION] = "true"
        performance = target.selected.recipe.entry.performance
        bench = benchmark_job(
            endpoint,
            namespace,
            settings.benchmark,
            concurrency=settings.benchmark.concurrency or performance.concurrency or 1,
            claim_name=claim_name,
            published={"performance": performance.model_dump(), "criteria": criteria.model_dump()},
            tolerations=_frontend_tolerations(dgd),
        )
        canary = canary_deployment(endpoint, namespace, settings.canary, {CONFIG_CHECKSUM_ANNOTATION: canary_digest})
        monitor = canary_pod_monitor(canary, settings.canary, {RELEASE_LABEL: release_label} if release_label else None)
        bench_cron = on_demand(bench, settings.benchmark.schedule)
        checks.append(TargetChecks(target.selected.id, target.resource_name, gated, smoke, bench_cron, canary, monitor))
    return OperabilityPlan(
        program_config_map=program_config_map(namespace, programs),
        smoke_tests=smoke_tests,
        benchmarks=benchmarks,
        canaries=canaries,
        canary_monitors=canaries and release_label is not None,
        targets=tuple(checks),
    )
