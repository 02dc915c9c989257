"""The proposed `autoscaling:` config block (the lead wires it into `StackConfig`).

    autoscaling:
      prometheusUrl: http://kube-prometheus-stack-prometheus.monitoring.svc:9090
      installKeda: true
      queueDepthPerReplica: 4
      targets:                       # bounds in replica sets (the catalog's measured unit)
        vllm/agg-h200-dspark: {minReplicaSets: 1, maxReplicaSets: 24}
      clusterAutoscaler: {enabled: true}

A target listed here gets a KEDA ScaledObject per worker component, and its DGD components get
`scalingAdapter: {enabled: true}` with Pulumi ignoring their `replicas`. `minReplicaSets: 0` lets KEDA
scale the target to zero (dev); pools with `minSize: 0` then let cluster-autoscaler remove the nodes.
"""
from __future__ import annotations

import pydantic

from serving_stack.config.types import Block


class TargetScalingConfig(Block):
    minReplicaSets: int = pydantic.Field(default=1, ge=0)
    maxReplicaSets: int = pydantic.Field(ge=1)

    @pydantic.model_validator(mode="after")
    def _ordered(self) -> "TargetScalingConfig":
        if self.maxReplicaSets < self.minReplicaSets:
            raise ValueError("maxReplicaSets must be >= minReplicaSets")
        return self


class ClusterAutoscalerConfig(Block):
    enabled: bool = True


class AutoscalingConfig(Block):
    prometheusUrl: str = pydantic.Field(pattern=r"^https?://[^\s]+$")
    installKeda: bool = True
    queueDepthPerReplica: int = pydantic.Field(default=4, ge=1)
    pollingIntervalSeconds: int = pydantic.Field(default=15, ge=5)
    cooldownPeriodSeconds: int = pydantic.Field(default=300, ge=30)
    scaleDownStabilizationSeconds: int = pydantic.Field(default=600, ge=0)
    targets: dict[str, TargetScalingConfig] = pydantic.Field(default_factory=dict)
    clusterAutoscaler: ClusterAutoscalerConfig = ClusterAutoscalerConfig()
