"""The `autoscaling:` config block: scaling with load.

    autoscaling:
      prometheusUrl: http://prometheus.example.svc:9090   # default: the stack's own Prometheus (monitoring)
      installKeda: true
      queueDepthPerReplica: 4
      targets:                       # bounds in replica sets (the catalog's measured unit)
        vllm/agg-h200-dspark: {minReplicaSets: 1, maxReplicaSets: 24}
      clusterAutoscaler: {enabled: true}

A target listed here (a selected target id, e.g. one `make plan ... WRITE=1` wrote) gets a KEDA
ScaledObject per worker component, and its DGD components get `scalingAdapter: {}` (v1beta1: present = on) with
Pulumi ignoring their `replicas`. `minReplicaSets: 0` lets KEDA scale the target to zero (dev); pools with
`minSize: 0` then let cluster-autoscaler remove the nodes. cluster-autoscaler is installed only on a
cluster the stack creates (an existing cluster's node groups belong to whoever runs it).
"""

from __future__ import annotations

from typing import Optional

import pydantic

from serving_stack.config.types import Block, HttpUrl


class TargetScalingConfig(Block):
    minReplicaSets: int = pydantic.Field(default=1, ge=0, le=64)
    maxReplicaSets: int = pydantic.Field(ge=1, le=64, description="at most 64, like targets[].replicas")

    @pydantic.model_validator(mode="after")
    def _ordered(self) -> TargetScalingConfig:
        if self.maxReplicaSets < self.minReplicaSets:
            raise ValueError("maxReplicaSets must be >= minReplicaSets")
        return self


class ClusterAutoscalerConfig(Block):
    enabled: bool = True


class AutoscalingConfig(Block):
    prometheusUrl: Optional[HttpUrl] = None
    installKeda: bool = True
    queueDepthPerReplica: int = pydantic.Field(
        default=4, ge=1, le=4096, description="at most 4096, like operability.benchmark.concurrency"
    )
    pollingIntervalSeconds: int = pydantic.Field(default=15, ge=5, le=3600, description="KEDA pollingInterval")
    cooldownPeriodSeconds: int = pydantic.Field(default=300, ge=30, le=86400, description="KEDA cooldownPeriod")
    scaleDownStabilizationSeconds: int = pydantic.Field(
        default=600, ge=0, le=3600, description="HPA stabilizationWindowSeconds: Kubernetes allows 0-3600"
    )
    targets: dict[str, TargetScalingConfig] = pydantic.Field(default_factory=dict)
    clusterAutoscaler: ClusterAutoscalerConfig = ClusterAutoscalerConfig()
