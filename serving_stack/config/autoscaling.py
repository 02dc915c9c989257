"""The `autoscaling:` block: scaling with load (KEDA for the targets' workers, cluster-autoscaler for the pools)."""

from __future__ import annotations

from typing import Optional

import pydantic

from serving_stack.config.types import Block, HttpUrl


class TargetScalingConfig(Block):
    """One target's bounds, in replica sets (the catalog's measured unit: the recipe's workers at their published
    replicas); `minReplicaSets` <= `maxReplicaSets`."""

    minReplicaSets: int = pydantic.Field(default=1, ge=0, le=64)
    """Fewest replica sets; 0 lets KEDA scale the target to zero (pools with `minSize: 0` then drop the nodes)."""
    maxReplicaSets: int = pydantic.Field(ge=1, le=64)
    """Most replica sets; the target's pool must hold their GPUs at `maxSize`."""

    @pydantic.model_validator(mode="after")
    def _ordered(self) -> TargetScalingConfig:
        if self.maxReplicaSets < self.minReplicaSets:
            raise ValueError("maxReplicaSets must be >= minReplicaSets")
        return self


class ClusterAutoscalerConfig(Block):
    """cluster-autoscaler, installed only on a cluster the stack creates (an existing cluster's node groups belong
    to whoever runs it)."""

    enabled: bool = True
    """Install it, with the node-template tags on every managed GPU pool; true is refused without `aws.cluster.create`."""


class AutoscalingConfig(Block):
    """Each listed target gets a KEDA ScaledObject per worker component and `scalingAdapter: {}` on those
    components (DGD v1beta1: present = on), Pulumi leaving their replicas to the adapters (docs/capacity.md)."""

    prometheusUrl: Optional[HttpUrl] = None
    """The Prometheus KEDA queries; unset: the stack's own (`monitoring`), required without it."""
    installKeda: bool = True
    """Install KEDA (catalog/autoscaling.yaml's chart); false where the cluster runs it already."""
    queueDepthPerReplica: int = pydantic.Field(default=4, ge=1, le=4096)
    """Requests waiting in the frontend per worker replica before KEDA adds one (a trigger's threshold)."""
    pollingIntervalSeconds: int = pydantic.Field(default=15, ge=5, le=3600)
    """How often KEDA queries the triggers, in seconds (KEDA ScaledObject pollingInterval)."""
    cooldownPeriodSeconds: int = pydantic.Field(default=300, ge=30, le=86400)
    """Seconds after the last active trigger before KEDA scales to zero (KEDA ScaledObject cooldownPeriod)."""
    scaleDownStabilizationSeconds: int = pydantic.Field(default=600, ge=0, le=3600)
    """Seconds of lower recommendations before replicas go (Kubernetes HPA behavior stabilizationWindowSeconds)."""
    targets: dict[str, TargetScalingConfig] = pydantic.Field(default_factory=dict)
    """Selected target ids (`targets[].id`, e.g. as `make plan ... WRITE=1` wrote them) and their bounds; unset: none."""
    clusterAutoscaler: ClusterAutoscalerConfig = ClusterAutoscalerConfig()
    """cluster-autoscaler for the GPU pools."""
