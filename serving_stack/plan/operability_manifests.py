"""Kubernetes objects that run the ops programs per serving target: smoke Job, benchmark Job, canary.

Pure functions of plain data returning manifests as dicts (the plan layer's job; components register
them). The programs ship in one ConfigMap, as the prewarm program does, and run from its mount.

Choices, and why:
- Smoke test: a Job on python slim, non-root, read-only root, no service-account token. It first
  waits (bounded) for /v1/models to list the model, so it can be applied with the target; Pulumi
  awaits Jobs, which makes it a deploy gate when the lead wires it that way.
- Benchmark: the upstream `perf.yaml` steps (see run_benchmark.py) on the pinned AIPerf image
  `nvcr.io/nvidia/ai-dynamo/aiperf` rather than python:3.12-slim + `pip install` at run time: the
  image is immutable and carries AIPerf's locked dependency set, needs no PyPI egress or apt from
  the cluster, and runs as a non-root user with a read-only root. The test suite runs the same
  AIPerf version (requirements-aiperf.txt; a test keeps the two pins equal). The trace and the
  results live on the model-cache PVC; a root init container with only CAP_CHOWN creates the results
  dir for the image's user (the cache is filled by root). Pod affinity to the target's frontend is
  *preferred*: co-location saves a network hop, but a frontend on a tainted or full node must not
  leave the benchmark unschedulable. A benchmark is load on a serving endpoint, so `on_demand`
  wraps it in a suspended CronJob: `kubectl create job --from=cronjob/<name>` runs it, any number
  of times, without drifting from what Pulumi manages (a schedule turns it into a regression run).
- Canary: a Deployment + PodMonitor, not a CronJob; canary.py's docstring says why.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

PROGRAM_DIR = Path(__file__).resolve().parents[2] / "ops"
PROGRAM_FILES = ("smoke.py", "canary.py", "run_benchmark.py", "benchmark_compare.py")
PROGRAM_CONFIG_MAP = "nemotron-ops-programs"
PROGRAM_MOUNT = "/opt/nemotron-ops"
PYTHON_IMAGE = "docker.io/library/python:3.12.8-slim"
AIPERF_IMAGE = "nvcr.io/nvidia/ai-dynamo/aiperf:0.11.0"
AIPERF_USER = 1000  # the runtime user of the AIPerf image (ai-dynamo/aiperf Dockerfile)
NOBODY = 65534
MODEL_CACHE = "/model-cache"
CANARY_PORT = 9400
NEVER = "0 0 31 2 *"  # 31 February: the schedule of an on-demand CronJob, which is suspended as well
PART_OF = {"app.kubernetes.io/part-of": "nemotron-ops"}
TARGET_LABEL = "nemotron.nvidia.com/target"
COMPONENT_TYPE_LABEL = "nvidia.com/dynamo-component-type"  # set by the Dynamo operator on every pod
DGD_NAME_LABEL = "nvidia.com/dynamo-graph-deployment-name"
# Upstream perf.yaml's AIPerf settings: a 64K-token trace takes long to load before the first request.
AIPERF_ENV = {"AIPERF_HTTP_CONNECTION_LIMIT": "200", "AIPERF_HTTP_SO_RCVTIMEO": "120",
              "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT": "3600", "AIPERF_DATASET_CONFIGURATION_TIMEOUT": "3600"}


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


def program_config_map(namespace: str) -> dict[str, Any]:
    data = {name: (PROGRAM_DIR / name).read_text() for name in PROGRAM_FILES}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": PROGRAM_CONFIG_MAP, "namespace": namespace,
            "labels": dict(PART_OF)}, "data": data}


def _labels(app: str, endpoint: Endpoint) -> dict[str, str]:
    return {"app.kubernetes.io/name": app, TARGET_LABEL: endpoint.dgd_name, **PART_OF}


def _metadata(name: str, namespace: str, labels: dict[str, str], endpoint: Endpoint) -> dict[str, Any]:
    if len(name) > 52:  # a CronJob's Jobs append 11 characters to a 63-character limit
        raise ValueError(f"{name!r} is longer than 52 characters")
    return {"name": name, "namespace": namespace, "labels": labels, "annotations": {"nemotron.nvidia.com/target-id": endpoint.target_id}}


def _container_security(user: int) -> dict[str, Any]:
    return {"runAsNonRoot": True, "runAsUser": user, "runAsGroup": user, "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


def _pod(containers: list[dict[str, Any]], volumes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"automountServiceAccountToken": False, "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "terminationGracePeriodSeconds": 10, "containers": containers,
            "volumes": [{"name": "programs", "configMap": {"name": PROGRAM_CONFIG_MAP}}, *volumes], **extra}


def _python_container(name: str, program: str, args: list[str], resources: dict[str, Any], image: str, user: int) -> dict[str, Any]:
    return {"name": name, "image": image, "command": ["python3", f"{PROGRAM_MOUNT}/{program}"], "args": args,
            "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}, {"name": "PYTHONUNBUFFERED", "value": "1"}],
            "resources": resources, "securityContext": _container_security(user),
            "volumeMounts": [{"name": "programs", "mountPath": PROGRAM_MOUNT, "readOnly": True}]}


def smoke_test_job(endpoint: Endpoint, namespace: str, *, wait_seconds: int = 3600, request_timeout_seconds: int = 120,
                   backoff_limit: int = 1, ttl_seconds_after_finished: int = 86400, image: str = PYTHON_IMAGE) -> dict[str, Any]:
    """The five smoke checks against the target's frontend, once it lists the model."""
    labels = _labels("nemotron-smoke-test", endpoint)
    args = ["--base-url", endpoint.base_url, "--model", endpoint.served_model_name,
            "--wait", str(wait_seconds), "--timeout", str(request_timeout_seconds)]
    resources = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}}
    container = _python_container("smoke", "smoke.py", args, resources, image, NOBODY)
    checks = 5
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _metadata(f"{endpoint.dgd_name}-smoke", namespace, labels, endpoint),
            "spec": {"backoffLimit": backoff_limit, "ttlSecondsAfterFinished": ttl_seconds_after_finished,
                     "activeDeadlineSeconds": (backoff_limit + 1) * (wait_seconds + checks * request_timeout_seconds + 60),
                     "template": {"metadata": {"labels": labels}, "spec": _pod([container], [], restartPolicy="Never")}}}


def benchmark_job(endpoint: Endpoint, namespace: str, *, concurrency: int, trace_file: str, claim_name: str,
                  published: dict[str, Any], num_requests: int = 400, wait_seconds: int = 3600,
                  active_deadline_seconds: int = 28800, ttl_seconds_after_finished: int = 604800,
                  tolerations: Sequence[dict[str, Any]] = (), image: str = AIPERF_IMAGE) -> dict[str, Any]:
    """AIPerf on the Mooncake trace at the catalog's concurrency; `published` is {performance, criteria}
    from the catalog, so the Job log ends with the comparison table (and comparison.json beside the export)."""
    labels = _labels("nemotron-benchmark", endpoint)
    results = f"{MODEL_CACHE}/perf"
    compare = {"target": endpoint.target_id, "gpus": endpoint.gpus, **published}
    args = ["--url", endpoint.frontend_root, "--model", endpoint.served_model_name, "--trace", f"{MODEL_CACHE}/traces/{trace_file}",
            "--concurrency", str(concurrency), "--num-requests", str(num_requests), "--results-root", results,
            "--run-name", "$(JOB_NAME)", "--wait", str(wait_seconds), "--compare", json.dumps(compare, sort_keys=True)]
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "8", "memory": "16Gi"}}
    main = _python_container("aiperf", "run_benchmark.py", args, resources, image, AIPERF_USER)
    main["env"] += [{"name": "JOB_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['job-name']"}}},
                    {"name": "HF_HOME", "value": MODEL_CACHE}, {"name": "HF_HUB_OFFLINE", "value": "1"},
                    {"name": "HOME", "value": "/tmp"}, *({"name": k, "value": v} for k, v in AIPERF_ENV.items())]
    main["volumeMounts"] += [{"name": "model-cache", "mountPath": MODEL_CACHE}, {"name": "tmp", "mountPath": "/tmp"}]
    make_results_dir = {
        "name": "results-dir", "image": image,
        "command": ["python3", "-c", f"import os; os.makedirs('{results}', exist_ok=True); os.chown('{results}', {AIPERF_USER}, {AIPERF_USER})"],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
        "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}},
        "volumeMounts": [{"name": "model-cache", "mountPath": MODEL_CACHE}],
    }
    frontend = {"labelSelector": {"matchLabels": {COMPONENT_TYPE_LABEL: "frontend", DGD_NAME_LABEL: endpoint.dgd_name}},
                "topologyKey": "kubernetes.io/hostname"}
    pod = _pod([main], [{"name": "model-cache", "persistentVolumeClaim": {"claimName": claim_name}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}}],
               restartPolicy="Never", initContainers=[make_results_dir], tolerations=list(tolerations),
               affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                   {"weight": 100, "podAffinityTerm": frontend}]}})
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _metadata(f"{endpoint.dgd_name}-bench", namespace, labels, endpoint),
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": active_deadline_seconds,
                     "ttlSecondsAfterFinished": ttl_seconds_after_finished,
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}


def on_demand(job: dict[str, Any], schedule: Optional[str] = None) -> dict[str, Any]:
    """A CronJob around `job`: suspended (run with `kubectl create job --from=cronjob/...`) unless scheduled."""
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": job["metadata"],
            "spec": {"schedule": schedule or NEVER, "suspend": schedule is None, "concurrencyPolicy": "Forbid",
                     "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 3,
                     "jobTemplate": {"metadata": {"labels": job["metadata"]["labels"]}, "spec": job["spec"]}}}


def canary_deployment(endpoint: Endpoint, namespace: str, *, interval_seconds: int = 60, timeout_seconds: int = 30,
                      image: str = PYTHON_IMAGE) -> dict[str, Any]:
    labels = _labels("nemotron-canary", endpoint)
    args = ["--base-url", endpoint.base_url, "--model", endpoint.served_model_name, "--target", endpoint.target_id,
            "--interval", str(interval_seconds), "--timeout", str(timeout_seconds), "--port", str(CANARY_PORT)]
    resources = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "96Mi"}}
    container = _python_container("canary", "canary.py", args, resources, image, NOBODY)
    container["ports"] = [{"name": "metrics", "containerPort": CANARY_PORT}]
    container["livenessProbe"] = {"httpGet": {"path": "/metrics", "port": "metrics"}, "periodSeconds": 30}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _metadata(f"{endpoint.dgd_name}-canary", namespace, labels, endpoint),
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": _pod([container], [])}}}


def canary_pod_monitor(deployment: dict[str, Any], *, scrape_interval_seconds: int = 30,
                       extra_labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """Selects the canary's pods; `extra_labels` e.g. {"release": ...} when Prometheus selects by label."""
    metadata = {**deployment["metadata"], "labels": {**deployment["metadata"]["labels"], **(extra_labels or {})}}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor", "metadata": metadata,
            "spec": {"selector": deployment["spec"]["selector"],
                     "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": f"{scrape_interval_seconds}s"}]}}
