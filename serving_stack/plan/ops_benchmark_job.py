"""The benchmark of a serving target: AIPerf (`ops/run_benchmark.py`) as a Job, wrapped in a CronJob.

The upstream `perf.yaml` steps (see run_benchmark.py) on the pinned AIPerf image
`nvcr.io/nvidia/ai-dynamo/aiperf` rather than python:3.12-slim + `pip install` at run time: the
image is immutable and carries AIPerf's locked dependency set, needs no PyPI egress or apt from
the cluster, and runs as a non-root user with a read-only root. The trace and the results live on
the model-cache PVC; a root init container with only CAP_CHOWN creates the results dir for the
image's user (the cache is filled by root). Pod affinity to the target's frontend is *preferred*:
co-location saves a network hop, but a frontend on a tainted or full node must not leave the
benchmark unschedulable. A benchmark is load on a serving endpoint, so `on_demand` wraps it in a
suspended CronJob: `kubectl create job --from=cronjob/<name>` runs it, any number of times, without
drifting from what Pulumi manages (a schedule turns it into a regression run).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.plan.ops_pods import Endpoint, object_metadata, ops_pod, python_container, target_labels

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
    labels = target_labels("nemotron-benchmark", endpoint)
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
