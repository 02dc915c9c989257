"""The `autoscaling:` block applied to the planned stack: which DGD components KEDA scales (their scaling
adapters enabled, their replicas left to the adapters), the ScaledObjects that do it, and cluster-autoscaler
with the tags of each GPU node group, on a cluster the stack creates.

The objects themselves are built by `serving_stack.plan.autoscaling_plan` and
`serving_stack.plan.cluster_autoscaler`; this module decides where they apply and checks, before any
resource, what would make them useless: a target the stack does not select, no Prometheus to read, bounds
the target's pool cannot hold, a cluster-autoscaler image for another Kubernetes minor than the cluster's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Optional

from serving_stack.config.autoscaling import AutoscalingConfig
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError
from serving_stack.facts import Facts
from serving_stack.facts.autoscaling_facts import HelmPin
from serving_stack.plan.autoscaling_plan import (
    ScalingBehaviour,
    component_scalings,
    enable_scaling_adapters,
    ignored_replica_paths,
    scaled_object,
)
from serving_stack.plan.capacity_inputs import candidate_row
from serving_stack.plan.cluster_autoscaler import (
    cluster_autoscaler_policy,
    cluster_autoscaler_values,
    node_group_autoscaler_tags,
)
from serving_stack.plan.pools import ResolvedPool
from serving_stack.plan.serving import PlannedTarget


@dataclass(frozen=True)
class ServingScalingPlan:
    """KEDA (`install_keda` False: the cluster runs it already) and one ScaledObject per scaled component."""

    keda: HelmPin
    install_keda: bool
    scaled_objects: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class ClusterScalingPlan:
    """cluster-autoscaler on the cluster the stack creates; `pool_tags`: the Auto Scaling group tags of each
    managed GPU pool (auto-discovery and the node-template hints for scaling up from zero)."""

    chart: HelmPin
    service_account: str
    policy: dict[str, Any]
    values: dict[str, Any]
    pool_tags: Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class AutoscalingPlan:
    serving: Optional[ServingScalingPlan]
    cluster: Optional[ClusterScalingPlan]


def _checks(
    scaling: AutoscalingConfig,
    config: StackConfig,
    facts: Facts,
    targets: Sequence[PlannedTarget],
    prometheus_url: Optional[str],
) -> list[ConfigError]:
    errors: list[ConfigError] = []
    selected = {t.selected.id: t for t in targets}
    for target_id in scaling.targets:
        if target_id not in selected:
            errors.append(
                ConfigError(
                    f"autoscaling.targets.{target_id}",
                    "not a target of this stack",
                    ", ".join(selected) or "none selected",
                )
            )
        elif selected[target_id].selected.recipe.entry.performance.concurrency is None:
            errors.append(ConfigError(f"autoscaling.targets.{target_id}", "no published concurrency to scale on"))
    if scaling.targets and prometheus_url is None:
        errors.append(
            ConfigError(
                "autoscaling.prometheusUrl",
                "required when the stack runs no Prometheus (monitoring disabled)",
                "the in-cluster URL of the Prometheus KEDA queries",
            )
        )
    create = config.aws.cluster.create if config.aws and config.aws.cluster else None
    cluster_autoscaler = facts.autoscaling.clusterAutoscaler
    if create is None and "enabled" in scaling.clusterAutoscaler.model_fields_set and scaling.clusterAutoscaler.enabled:
        errors.append(
            ConfigError(
                "autoscaling.clusterAutoscaler.enabled",
                "the stack installs cluster-autoscaler only on the cluster it creates (aws.cluster.create)",
                "false",
            )
        )
    elif create is not None and scaling.clusterAutoscaler.enabled:
        image_minor = cluster_autoscaler.imageTag.removeprefix("v").rsplit(".", 1)[0]
        if create.kubernetesVersion != image_minor:
            errors.append(
                ConfigError(
                    "aws.cluster.create.kubernetesVersion",
                    f"cluster-autoscaler "
                    f"{cluster_autoscaler.imageTag} (catalog/autoscaling.yaml) matches Kubernetes "
                    f"{image_minor}; the cluster runs {create.kubernetesVersion}",
                    image_minor,
                )
            )
    return errors + _fit(scaling, facts, targets)


def _fit(scaling: AutoscalingConfig, facts: Facts, targets: Sequence[PlannedTarget]) -> list[ConfigError]:
    """Each pool holds the GPUs of its targets at their `maxReplicaSets` (the others at their configured size)."""
    errors: list[ConfigError] = []
    for pool in {t.pool.name: t.pool for t in targets if t.pool is not None}.values():
        on_pool = [t for t in targets if t.pool is not None and t.pool.name == pool.name]
        most = sum(
            candidate_row(t.selected.recipe, facts.aws).gpus_per_replica_set
            * scaling.targets[t.selected.id].maxReplicaSets
            if t.selected.id in scaling.targets
            else t.selected.gpus
            for t in on_pool
        )
        if most > pool.max_size * pool.gpus_per_node:
            scaled = next(t.selected.id for t in on_pool if t.selected.id in scaling.targets)
            errors.append(
                ConfigError(
                    f"autoscaling.targets.{scaled}.maxReplicaSets",
                    f"the targets on pool "
                    f"{pool.name!r} need {most} GPUs at their maxReplicaSets; the pool holds "
                    f"{pool.max_size} nodes x {pool.gpus_per_node} GPUs",
                    f"fewer sets, or aws.nodePools maxSize >= {math.ceil(most / pool.gpus_per_node)}",
                )
            )
    return errors


def _serving(
    scaling: AutoscalingConfig,
    facts: Facts,
    targets: Sequence[PlannedTarget],
    prometheus_url: str,
    max_ttft_p50_ms: float,
) -> tuple[list[PlannedTarget], ServingScalingPlan]:
    behaviour = ScalingBehaviour(
        scaling.pollingIntervalSeconds, scaling.cooldownPeriodSeconds, scaling.scaleDownStabilizationSeconds
    )
    queries = facts.autoscaling.metrics.queries()
    patched, objects = [], []
    for target in targets:
        bounds = scaling.targets.get(target.selected.id)
        if bounds is None:
            patched.append(target)
            continue
        row = candidate_row(target.selected.recipe, facts.aws)
        assert row.concurrency is not None  # checked
        dgd_name, namespace = target.dgd["metadata"]["name"], target.dgd["metadata"]["namespace"]
        components = component_scalings(
            dgd_name,
            row.worker_replicas,
            row.concurrency,
            bounds.minReplicaSets,
            bounds.maxReplicaSets,
            max_ttft_p50_ms,
            scaling.queueDepthPerReplica,
        )
        objects += [scaled_object(c, namespace, prometheus_url, queries, behaviour) for c in components]
        scaled = set(row.worker_replicas)
        dgd = enable_scaling_adapters(target.dgd, scaled)
        paths = tuple(ignored_replica_paths(dgd, scaled))
        patched.append(dataclasses.replace(target, dgd=dgd, ignored_replica_paths=paths))
    keda = facts.autoscaling.keda.pin()
    return patched, ServingScalingPlan(keda, scaling.installKeda, tuple(objects))


def _cluster(config: StackConfig, facts: Facts, pools: Sequence[ResolvedPool]) -> Optional[ClusterScalingPlan]:
    aws, scaling = config.aws, config.autoscaling
    create = aws.cluster.create if aws and aws.cluster else None
    if aws is None or create is None or scaling is None or not scaling.clusterAutoscaler.enabled:
        return None
    chart = facts.autoscaling.clusterAutoscaler
    tags = {
        pool.name: MappingProxyType(
            node_group_autoscaler_tags(
                create.name,
                pool.node_labels,
                pool.gpu_product,
                pool.gpus_per_node,
                pool.efa_interfaces if pool.fabric == "efa" else 0,
            )
        )
        for pool in pools
        if pool.managed
    }
    return ClusterScalingPlan(
        chart=chart.pin(),
        service_account=chart.serviceAccount,
        policy=cluster_autoscaler_policy(create.name),
        values=cluster_autoscaler_values(create.name, aws.region, chart.imageTag, chart.serviceAccount),
        pool_tags=MappingProxyType(tags),
    )


def plan_autoscaling(
    config: StackConfig,
    facts: Facts,
    targets: Sequence[PlannedTarget],
    pools: Sequence[ResolvedPool],
    prometheus_url: Optional[str],
    max_ttft_p50_ms: float,
) -> tuple[list[PlannedTarget], Optional[AutoscalingPlan]]:
    """The targets with their scaling adapters enabled, and what scales them; or one `ConfigError`.
    `prometheus_url`: `autoscaling.prometheusUrl`, else the stack's own Prometheus; `max_ttft_p50_ms`: the SLO."""
    scaling = config.autoscaling
    if scaling is None:
        return list(targets), None
    url = scaling.prometheusUrl or prometheus_url
    errors = _checks(scaling, config, facts, targets, url)
    if errors:
        raise ConfigError.combined(errors)
    serving = None
    if scaling.targets:
        assert url is not None  # checked
        targets, serving = _serving(scaling, facts, targets, url, max_ttft_p50_ms)
    return list(targets), AutoscalingPlan(serving, _cluster(config, facts, pools))
