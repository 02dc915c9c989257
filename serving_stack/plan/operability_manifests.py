"""Kubernetes objects that run the ops programs (`ops/`) per serving target: smoke Job, benchmark CronJob, canary.

Pure functions of plain data returning manifests as dicts; the `Operability` component registers them. The
programs ship in one ConfigMap, as the prewarm program does, and run from its mount.

Choices, and why:
- Smoke test: a Job on python slim, non-root, read-only root, no service-account token. It first waits
  (bounded) for /v1/models to list the model. Pulumi awaits Jobs, so ordered after its DynamoGraphDeployment
  it is a deploy gate. It has no `ttlSecondsAfterFinished`: Pulumi manages it, and a Job the TTL controller
  deletes is drift that the next `pulumi refresh` turns into a rerun; kept, its log stays readable.
- Benchmark: the upstream `perf.yaml` steps (see run_benchmark.py) on the pinned AIPerf image
  `nvcr.io/nvidia/ai-dynamo/aiperf` rather than python:3.12-slim + `pip install` at run time: the
  image is immutable and carries AIPerf's locked dependency set, needs no PyPI egress or apt from
  the cluster, and runs as a non-root user with a read-only root. The trace and the results live on
  the model-cache PVC; a root init container with only CAP_CHOWN creates the results dir for the
  image's user (the cache is filled by root). Pod affinity to the target's frontend is *preferred*:
  co-location saves a network hop, but a frontend on a tainted or full node must not leave the
  benchmark unschedulable. A benchmark is load on a serving endpoint, so `on_demand` wraps it in a
  suspended CronJob: `kubectl create job --from=cronjob/<name>` runs it, any number of times, without
  drifting from what Pulumi manages (a schedule turns it into a regression run).
- Canary: a Deployment + PodMonitor, not a CronJob; canary.py's docstring says why.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from serving_stack.names import PART_OF_LABEL

OPS_PROGRAM_DIR = Path(__file__).resolve().parents[2] / "ops"
PROGRAM_FILES = ("smoke.py", "canary.py", "run_benchmark.py", "benchmark_compare.py")
PROGRAM_CONFIG_MAP = "nemotron-ops-programs"
PROGRAM_MOUNT = "/opt/nemotron-ops"
CHECKOV_SKIP_ANNOTATION = "checkov.io/skip1"
AIPERF_USER = 1000  # the runtime user of the AIPerf image (ai-dynamo/aiperf Dockerfile)
NOBODY = 65534
MODEL_CACHE = "/model-cache"
CANARY_PORT = 9400
SMOKE_CHECKS = 5  # ops/smoke.py CHECKS (a test keeps them equal)
NEVER = "0 0 31 2 *"  # 31 February: the schedule of an on-demand CronJob, which is suspended as well
PART_OF = {PART_OF_LABEL: "nemotron-ops"}
TARGET_LABEL = "nemotron.nvidia.com/target"
TARGET_ID_ANNOTATION = "nemotron.nvidia.com/target-id"
COMPONENT_TYPE_LABEL = "nvidia.com/dynamo-component-type"  # set by the Dynamo operator on every pod
DGD_NAME_LABEL = "nvidia.com/dynamo-graph-deployment-name"
# Upstream perf.yaml's AIPerf settings: a 64K-token trace takes long to load before the first request.
AIPERF_ENV = {
    "AIPERF_HTTP_CONNECTION_LIMIT": "200",
    "AIPERF_HTTP_SO_RCVTIMEO": "120",
    "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT": "3600",
    "AIPERF_DATASET_CONFIGURATION_TIMEOUT": "3600",
}


@dataclass(frozen=True)
class Endpoint:
    """One planned target, as the ops objects need it (all from the plan / outputs contract)."""

    target_id: str  # catalog id, e.g. vllm/agg-h200-dspark
    dgd_name: str  # also the prefix of the frontend Service, <dgd>-frontend
    served_model_name: str
    base_url: str  # OpenAI base URL with /v1 (the contract's `url`)
    gpus: int

    @property
    def frontend_root(self) -> str:
        return self.base_url.removesuffix("/v1")


@dataclass(frozen=True)
class SmokeSettings:
    image: str
    request_timeout_seconds: int
    backoff_limit: int

    def active_deadline_seconds(self, wait_seconds: int) -> int:
        """Every attempt may wait for the model, then run each check to its timeout (plus a minute to start)."""
        return (self.backoff_limit + 1) * (wait_seconds + SMOKE_CHECKS * self.request_timeout_seconds + 60)


@dataclass(frozen=True)
class BenchmarkSettings:
    image: str
    trace_file: str
    num_requests: int
    wait_seconds: int
    active_deadline_seconds: int
    ttl_seconds_after_finished: int
    schedule: Optional[str]
    concurrency: Optional[int] = None  # None: the recipe's published concurrency


@dataclass(frozen=True)
class CanarySettings:
    image: str
    interval_seconds: int
    timeout_seconds: int
    scrape_interval_seconds: int


def read_programs() -> dict[str, str]:
    return {name: (OPS_PROGRAM_DIR / name).read_text() for name in PROGRAM_FILES}


def programs_digest(programs: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(programs), sort_keys=True).encode()).hexdigest()


def program_config_map(namespace: str, programs: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": PROGRAM_CONFIG_MAP, "namespace": namespace, "labels": dict(PART_OF)},
        "data": dict(programs),
    }


def canary_name(dgd_name: str) -> str:
    """The canary Deployment of a target; its pods are `<this>-<replicaset hash>-<pod hash>`."""
    return f"{dgd_name}-canary"


def _labels(app: str, endpoint: Endpoint) -> dict[str, str]:
    return {"app.kubernetes.io/name": app, TARGET_LABEL: endpoint.dgd_name, **PART_OF}


def _metadata(name: str, namespace: str, labels: dict[str, str], endpoint: Endpoint) -> dict[str, Any]:
    if len(name) > 52:  # a CronJob's Jobs append 11 characters to a 63-character limit
        raise ValueError(f"{name!r} is longer than 52 characters")
    return {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "annotations": {TARGET_ID_ANNOTATION: endpoint.target_id},
    }


def _template_metadata(labels: dict[str, str], annotations: Mapping[str, str]) -> dict[str, Any]:
    return {"labels": labels, **({"annotations": dict(annotations)} if annotations else {})}


def _container_security(user: int) -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": user,
        "runAsGroup": user,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _pod(containers: list[dict[str, Any]], volumes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "terminationGracePeriodSeconds": 10,
        "containers": containers,
        "volumes": [{"name": "programs", "configMap": {"name": PROGRAM_CONFIG_MAP}}, *volumes],
        **extra,
    }


def _python_container(
    name: str, program: str, args: list[str], resources: dict[str, Any], image: str, user: int
) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "command": ["python3", f"{PROGRAM_MOUNT}/{program}"],
        "args": args,
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}, {"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": resources,
        "securityContext": _container_security(user),
        "volumeMounts": [{"name": "programs", "mountPath": PROGRAM_MOUNT, "readOnly": True}],
    }


def smoke_test_job(
    endpoint: Endpoint,
    namespace: str,
    settings: SmokeSettings,
    wait_seconds: int,
    template_annotations: Mapping[str, str],
) -> dict[str, Any]:
    """The smoke checks against the target's frontend, once it lists the model (waiting at most `wait_seconds`).
    A change of `template_annotations` (digests of what the test exercises) replaces the Job: it runs again."""
    labels = _labels("nemotron-smoke-test", endpoint)
    args = [
        "--base-url",
        endpoint.base_url,
        "--model",
        endpoint.served_model_name,
        "--wait",
        str(wait_seconds),
        "--timeout",
        str(settings.request_timeout_seconds),
    ]
    resources = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}}
    container = _python_container("smoke", "smoke.py", args, resources, settings.image, NOBODY)
    metadata = _metadata(f"{endpoint.dgd_name}-smoke", namespace, labels, endpoint)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": settings.backoff_limit,
            "activeDeadlineSeconds": settings.active_deadline_seconds(wait_seconds),
            "template": {
                "metadata": _template_metadata(labels, template_annotations),
                "spec": _pod([container], [], restartPolicy="Never"),
            },
        },
    }


def benchmark_job(
    endpoint: Endpoint,
    namespace: str,
    settings: BenchmarkSettings,
    *,
    concurrency: int,
    claim_name: str,
    published: Mapping[str, Any],
    tolerations: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """AIPerf on the Mooncake trace at the catalog's concurrency; `published` is {performance, criteria}
    from the catalog, so the Job log ends with the comparison table (and comparison.json beside the export)."""
    labels = _labels("nemotron-benchmark", endpoint)
    results = f"{MODEL_CACHE}/perf"
    compare = {"target": endpoint.target_id, "gpus": endpoint.gpus, **published}
    args = [
        "--url",
        endpoint.frontend_root,
        "--model",
        endpoint.served_model_name,
        "--trace",
        f"{MODEL_CACHE}/traces/{settings.trace_file}",
        "--concurrency",
        str(concurrency),
        "--num-requests",
        str(settings.num_requests),
        "--results-root",
        results,
        "--run-name",
        "$(JOB_NAME)",
        "--wait",
        str(settings.wait_seconds),
        "--compare",
        json.dumps(compare, sort_keys=True),
    ]
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "8", "memory": "16Gi"}}
    main = _python_container("aiperf", "run_benchmark.py", args, resources, settings.image, AIPERF_USER)
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
        "securityContext": {
            "runAsUser": 0,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]},
        },
        "volumeMounts": [{"name": "model-cache", "mountPath": MODEL_CACHE}],
    }
    frontend = {
        "labelSelector": {"matchLabels": {COMPONENT_TYPE_LABEL: "frontend", DGD_NAME_LABEL: endpoint.dgd_name}},
        "topologyKey": "kubernetes.io/hostname",
    }
    pod = _pod(
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
    metadata = _metadata(f"{endpoint.dgd_name}-bench", namespace, labels, endpoint)
    # checkov's high-UID check: AIPerf runs as the image's own user, whose home and caches it owns.
    metadata["annotations"][CHECKOV_SKIP_ANNOTATION] = f"CKV_K8S_40=the AIPerf image runs as its own user {AIPERF_USER}"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": settings.active_deadline_seconds,
            "ttlSecondsAfterFinished": settings.ttl_seconds_after_finished,
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


def canary_deployment(
    endpoint: Endpoint, namespace: str, settings: CanarySettings, template_annotations: Mapping[str, str]
) -> dict[str, Any]:
    """`template_annotations`: digests of the programs it runs, so a changed program rolls the pod."""
    labels = _labels("nemotron-canary", endpoint)
    args = [
        "--base-url",
        endpoint.base_url,
        "--model",
        endpoint.served_model_name,
        "--target",
        endpoint.target_id,
        "--interval",
        str(settings.interval_seconds),
        "--timeout",
        str(settings.timeout_seconds),
        "--port",
        str(CANARY_PORT),
    ]
    resources = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "96Mi"}}
    container = _python_container("canary", "canary.py", args, resources, settings.image, NOBODY)
    container["ports"] = [{"name": "metrics", "containerPort": CANARY_PORT}]
    container["livenessProbe"] = {"httpGet": {"path": "/metrics", "port": "metrics"}, "periodSeconds": 30}
    name = canary_name(endpoint.dgd_name)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(name, namespace, labels, endpoint),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": _template_metadata(labels, template_annotations), "spec": _pod([container], [])},
        },
    }


def canary_pod_monitor(
    deployment: dict[str, Any], settings: CanarySettings, extra_labels: Optional[Mapping[str, str]] = None
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
                {"port": "metrics", "path": "/metrics", "interval": f"{settings.scrape_interval_seconds}s"}
            ],
        },
    }
