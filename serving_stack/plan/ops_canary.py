"""The canary of a serving target: a Deployment running `ops/canary.py` and the PodMonitor scraping it.

A Deployment + PodMonitor, not a CronJob; canary.py's docstring says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.plan.ops_pods import (
    NOBODY,
    Endpoint,
    object_metadata,
    ops_pod,
    python_container,
    target_labels,
    template_metadata,
)

CANARY_PORT = 9400


@dataclass(frozen=True)
class CanarySettings:
    image: str
    interval_seconds: int
    timeout_seconds: int
    scrape_interval_seconds: int


def canary_name(dgd_name: str) -> str:
    """The canary Deployment of a target; its pods are `<this>-<replicaset hash>-<pod hash>`."""
    return f"{dgd_name}-canary"


def canary_deployment(
    endpoint: Endpoint, namespace: str, settings: CanarySettings, template_annotations: Mapping[str, str]
) -> dict[str, Any]:
    """`template_annotations`: digests of the programs it runs, so a changed program rolls the pod."""
    labels = target_labels("nemotron-canary", endpoint)
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
