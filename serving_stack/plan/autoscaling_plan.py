"""Scaling with load, as plain data: a KEDA ScaledObject per autoscaled DGD worker component, the DGD
change that makes the operator create the component's scaling adapter, and the replica paths Pulumi must
stop owning (cluster-autoscaler's node-group tags, IAM policy and values: `cluster_autoscaler`).

Why KEDA and not HPA + Prometheus Adapter: the query lives in the ScaledObject next to its target (no
adapter rule file shared by every target), KEDA can scale a component to zero, and it is the Dynamo
docs' recommended path. KEDA still drives an HPA underneath, so HPA `behavior` applies.

A component scales on the most demanding of three triggers (KEDA takes the maximum):
- in-flight requests per replica against the concurrency the catalog measured per worker: the planner's
  capacity model ("a replica serves at most its measured concurrency");
- queue depth per replica (requests waiting in the frontend);
- TTFT p50 against the SLO (a Value metric: replicas grow in proportion to the overshoot).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from serving_stack.facts.autoscaling_facts import ADAPTER_API_VERSION, ADAPTER_KIND, MetricQueries


@dataclass(frozen=True)
class ComponentScaling:
    """One DGD worker component under an autoscaler. Replica bounds are in pods of this component."""

    dgd_name: str
    component: str
    min_replicas: int
    max_replicas: int
    concurrency_per_replica: float
    max_ttft_p50_ms: float
    queue_depth_per_replica: int


@dataclass(frozen=True)
class ScalingBehaviour:
    polling_interval_s: int = 15
    cooldown_period_s: int = 300
    scale_down_stabilization_s: int = 600


def keda_number(value: float) -> str:
    """A trigger threshold as KEDA's metadata takes it: a string (every metadata value is one), in plain
    decimal: `4`, `0.5`, never `1e+06` (which `:g` makes of 1000000)."""
    if float(value).is_integer():
        return str(int(value))
    return format(Decimal(repr(float(value))), "f")


def adapter_name(dgd_name: str, component: str) -> str:
    """The operator's name for a component's scaling adapter: `<dgd>-<component, lower case>`."""
    return f"{dgd_name}-{component.lower()}"


def scaled_object(
    scaling: ComponentScaling, namespace: str, prometheus_url: str, queries: MetricQueries, behaviour: ScalingBehaviour
) -> dict[str, Any]:
    q = queries.for_dgd(namespace, scaling.dgd_name)

    def trigger(name: str, query: str, threshold: float, metric_type: str, activation: float) -> dict[str, Any]:
        return {
            "type": "prometheus",
            "name": name,
            "metricType": metric_type,
            "metadata": {
                "serverAddress": prometheus_url,
                "query": query,
                "threshold": keda_number(threshold),
                "activationThreshold": keda_number(activation),
            },
        }

    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": adapter_name(scaling.dgd_name, scaling.component),
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/managed-by": "pulumi",
                "nvidia.com/dynamo-graph-deployment-name": scaling.dgd_name,
            },
        },
        "spec": {
            "scaleTargetRef": {
                "apiVersion": ADAPTER_API_VERSION,
                "kind": ADAPTER_KIND,
                "name": adapter_name(scaling.dgd_name, scaling.component),
            },
            "minReplicaCount": scaling.min_replicas,
            "maxReplicaCount": scaling.max_replicas,
            "pollingInterval": behaviour.polling_interval_s,
            "cooldownPeriod": behaviour.cooldown_period_s,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        "scaleDown": {
                            "stabilizationWindowSeconds": behaviour.scale_down_stabilization_s,
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}],
                        },
                        "scaleUp": {
                            "stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 60}],
                        },
                    }
                }
            },
            "triggers": [
                trigger(
                    "inflight-per-replica", q.inflight_requests, scaling.concurrency_per_replica, "AverageValue", 0
                ),
                trigger("queue-per-replica", q.queue_depth, scaling.queue_depth_per_replica, "AverageValue", 0),
                trigger(
                    "ttft-p50-vs-slo",
                    q.ttft_p50_seconds,
                    scaling.max_ttft_p50_ms / 1000,
                    "Value",
                    scaling.max_ttft_p50_ms / 2000,
                ),
            ],
        },
    }


def enable_scaling_adapters(dgd: Mapping[str, Any], components: set[str]) -> dict[str, Any]:
    """The DGD with `scalingAdapter: {enabled: true}` on these components (default false: no adapter)."""
    patched = copy.deepcopy(dict(dgd))
    for component in patched["spec"]["components"]:
        if component["name"] in components:
            component["scalingAdapter"] = {"enabled": True}
    return patched


def ignored_replica_paths(dgd: Mapping[str, Any], components: set[str]) -> list[str]:
    """`ResourceOptions(ignore_changes=...)` for the DGD CustomResource: the replicas the adapters own."""
    return [
        f"spec.components[{index}].replicas"
        for index, component in enumerate(dgd["spec"]["components"])
        if component["name"] in components
    ]


def component_scalings(
    dgd_name: str,
    worker_replicas: Mapping[str, int],
    concurrency: int,
    min_replica_sets: int,
    max_replica_sets: int,
    max_ttft_p50_ms: float,
    queue_depth_per_replica: int,
) -> list[ComponentScaling]:
    """Bounds in replica sets become bounds per worker component (sets x its replicas per set); each worker
    carries its share of the set's measured concurrency (a 4-worker KV-router set at 96 is 24 a worker; a
    1P1D set at 8 is 8 for the prefill worker and 8 for the decode worker)."""
    return [
        ComponentScaling(
            dgd_name,
            component,
            min_replica_sets * per_set,
            max_replica_sets * per_set,
            concurrency / per_set,
            max_ttft_p50_ms,
            queue_depth_per_replica,
        )
        for component, per_set in sorted(worker_replicas.items())
    ]
