"""The `autoscaling:` block applied to the planned stack: a KEDA ScaledObject per worker component of each listed
target (the adapters are enabled where the DGD is rendered) and cluster-autoscaler with each managed GPU node group's
tags, on a cluster the stack creates. A component scales on the most demanding of requests in flight and queued per
replica and TTFT p50 against the SLO; KEDA rather than HPA + Prometheus Adapter (the query lives next to its target,
it scales to zero, the Dynamo docs recommend it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Optional

from serving_stack.config.autoscaling import AutoscalingConfig
from serving_stack.config.aws import CreateCluster
from serving_stack.errors import ConfigError
from serving_stack.facts.aws import AutoscalingFile, Chart, ClusterAutoscalerChart
from serving_stack.names import GPU_PRODUCT_LABEL, GPU_TAINT
from serving_stack.plan.pools import ResolvedPool
from serving_stack.plan.serving import PlannedTarget

CA_TAG_PREFIX = "k8s.io/cluster-autoscaler"


def keda_number(value: float) -> str:
    """A trigger threshold as KEDA's metadata takes it: a string in plain decimal (`4`, `0.5`, never `1e+06`)."""
    return str(int(value)) if float(value).is_integer() else format(Decimal(repr(float(value))), "f")


def adapter_name(dgd_name: str, component: str) -> str:
    """The operator's name for a component's scaling adapter: `<dgd>-<component, lower case>`."""
    return f"{dgd_name}-{component.lower()}"


def scaled_objects(
    target: PlannedTarget, scaling: AutoscalingConfig, prometheus_url: str, facts: AutoscalingFile, slo_ms: float
) -> list[dict[str, Any]]:
    """One ScaledObject per worker component. Bounds in replica sets (the catalog's measured unit) become pods of
    the component (sets x its published replicas per set); each worker carries its share of the set's measured
    concurrency (a 4-worker KV-router set at 96 is 24 a worker; a 1P1D set at 8 is 8 for each)."""
    bounds, recipe = scaling.targets[target.selected.id], target.selected.recipe
    concurrency = recipe.entry.performance.concurrency
    assert concurrency is not None  # checked
    dgd_name, namespace = target.dgd["metadata"]["name"], target.dgd["metadata"]["namespace"]
    q, adapter = facts.metrics.for_dgd(namespace, dgd_name), facts.scalingAdapter

    def trigger(name: str, query: str, metric_type: str, threshold: float, activation: float = 0) -> dict[str, Any]:
        metadata = {"serverAddress": prometheus_url, "query": query, "threshold": keda_number(threshold)}
        metadata["activationThreshold"] = keda_number(activation)
        return {"type": "prometheus", "name": name, "metricType": metric_type, "metadata": metadata}

    objects = []
    for component, per_set in sorted(recipe.worker_replicas.items()):
        name = adapter_name(dgd_name, component)
        down = {"type": "Pods", "value": 1, "periodSeconds": 300}
        up = {"type": "Percent", "value": 100, "periodSeconds": 60}
        behavior = {
            "scaleDown": {"stabilizationWindowSeconds": scaling.scaleDownStabilizationSeconds, "policies": [down]},
            "scaleUp": {"stabilizationWindowSeconds": 0, "policies": [up]},
        }
        triggers = [
            trigger("inflight-per-replica", q.inflightRequests, "AverageValue", concurrency / per_set),
            trigger("queue-per-replica", q.queueDepth, "AverageValue", scaling.queueDepthPerReplica),
            trigger("ttft-p50-vs-slo", q.ttftP50Seconds, "Value", slo_ms / 1000, slo_ms / 2000),
        ]
        labels = {"app.kubernetes.io/managed-by": "pulumi", "nvidia.com/dynamo-graph-deployment-name": dgd_name}
        spec = {
            "scaleTargetRef": {"apiVersion": adapter.apiVersion, "kind": adapter.kind, "name": name},
            "minReplicaCount": bounds.minReplicaSets * per_set,
            "maxReplicaCount": bounds.maxReplicaSets * per_set,
            "pollingInterval": scaling.pollingIntervalSeconds,
            "cooldownPeriod": scaling.cooldownPeriodSeconds,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior}},
            "triggers": triggers,
        }
        metadata = {"name": name, "namespace": namespace, "labels": labels}
        objects.append({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": metadata, "spec": spec})
    return objects


def node_group_autoscaler_tags(pool: ResolvedPool, cluster_name: str) -> dict[str, str]:
    """Tags for a GPU node group's Auto Scaling group: auto-discovery, plus the node-template hints that let
    cluster-autoscaler scale it up from zero nodes (it cannot read labels, taints or extended resources from a
    node that does not exist). `nvidia.com/gpu.product` matters most: workers select it, and GPU Feature
    Discovery sets it on a running node only, so without the hint no empty group ever matches a pending worker."""
    tags = {f"{CA_TAG_PREFIX}/enabled": "true", f"{CA_TAG_PREFIX}/{cluster_name}": "owned"}
    labels = {**pool.node_labels, GPU_PRODUCT_LABEL: pool.gpu_product}
    tags |= {f"{CA_TAG_PREFIX}/node-template/label/{key}": value for key, value in sorted(labels.items())}
    tags[f"{CA_TAG_PREFIX}/node-template/taint/{GPU_TAINT['key']}"] = f"{GPU_TAINT['value']}:{GPU_TAINT['effect']}"
    tags[f"{CA_TAG_PREFIX}/node-template/resources/nvidia.com/gpu"] = str(pool.gpus_per_node)
    if pool.fabric == "efa" and pool.efa_interfaces:
        tags[f"{CA_TAG_PREFIX}/node-template/resources/vpc.amazonaws.com/efa"] = str(pool.efa_interfaces)
    return tags


def cluster_autoscaler_policy(cluster_name: str) -> dict[str, Any]:
    """Least privilege for auto-discovery: reads on `*` (those actions support no resource scoping);
    scaling writes only on groups tagged as this cluster's; DescribeNodegroup only on its node groups."""
    discover = ["DescribeAutoScalingGroups", "DescribeAutoScalingInstances", "DescribeLaunchConfigurations"]
    discover = [f"autoscaling:{a}" for a in [*discover, "DescribeScalingActivities"]]
    discover += [f"ec2:{a}" for a in ("DescribeImages", "DescribeInstanceTypes", "DescribeLaunchTemplateVersions")]
    scale = ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Discover",
                "Effect": "Allow",
                "Resource": "*",
                "Action": [*discover, "ec2:GetInstanceTypesFromInstanceRequirements"],
            },
            {
                "Sid": "ScaleOwnGroups",
                "Effect": "Allow",
                "Resource": "*",
                "Action": scale,
                "Condition": {"StringEquals": {f"aws:ResourceTag/{CA_TAG_PREFIX}/{cluster_name}": "owned"}},
            },
            {
                "Sid": "ReadOwnNodegroups",
                "Effect": "Allow",
                "Action": ["eks:DescribeNodegroup"],
                "Resource": f"arn:aws:eks:*:*:nodegroup/{cluster_name}/*/*",
            },
        ],
    }


def cluster_autoscaler_values(cluster_name: str, region: str, image_tag: str, service_account: str) -> dict[str, Any]:
    """AWS auto-discovery by the cluster's tags, the least-waste expander (fewest idle GPUs), and no scale-down
    of nodes that hold the prewarmed page cache for less than 10 minutes."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "image": {"tag": image_tag},
        "rbac": {"serviceAccount": {"create": True, "name": service_account}},
        "extraArgs": {
            "expander": "least-waste",
            "balance-similar-node-groups": True,
            "skip-nodes-with-local-storage": False,
            "scale-down-unneeded-time": "10m",
            "scale-down-delay-after-add": "10m",
        },
    }


@dataclass(frozen=True)
class ServingScalingPlan:
    """KEDA (`install_keda` False: the cluster runs it already) and one ScaledObject per scaled component."""

    keda: Chart
    install_keda: bool
    scaled_objects: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class ClusterScalingPlan:
    """cluster-autoscaler on the cluster the stack creates; `pool_tags`: the Auto Scaling group tags of each
    managed GPU pool."""

    chart: ClusterAutoscalerChart
    policy: dict[str, Any]
    values: dict[str, Any]
    pool_tags: Mapping[str, Mapping[str, str]]


def _checks(
    scaling: AutoscalingConfig,
    create: Optional[CreateCluster],
    targets: Sequence[PlannedTarget],
    prometheus_url: Optional[str],
    image_tag: str,
) -> list[ConfigError]:
    errors: list[ConfigError] = []
    selected = {t.selected.id: t for t in targets}
    for target_id in scaling.targets:
        key = f"autoscaling.targets.{target_id}"
        if target_id not in selected:
            errors.append(ConfigError(key, "not a target of this stack", ", ".join(selected) or "none selected"))
        elif selected[target_id].selected.recipe.entry.performance.concurrency is None:
            errors.append(ConfigError(key, "no published concurrency to scale on"))
    if scaling.targets and prometheus_url is None:
        problem, allowed = "required when the stack runs no Prometheus (monitoring disabled)", "the in-cluster URL"
        errors.append(ConfigError("autoscaling.prometheusUrl", problem, allowed + " of the Prometheus KEDA queries"))
    enabled = scaling.clusterAutoscaler.enabled
    if create is None and "enabled" in scaling.clusterAutoscaler.model_fields_set and enabled:
        problem = "the stack installs cluster-autoscaler only on the cluster it creates (aws.cluster.create)"
        errors.append(ConfigError("autoscaling.clusterAutoscaler.enabled", problem, "false"))
    elif create is not None and enabled:
        minor = image_tag.removeprefix("v").rsplit(".", 1)[0]
        if create.kubernetesVersion != minor:
            problem = f"cluster-autoscaler {image_tag} (catalog/autoscaling.yaml) matches Kubernetes {minor}; "
            problem += f"the cluster runs {create.kubernetesVersion}"
            errors.append(ConfigError("aws.cluster.create.kubernetesVersion", problem, minor))
    for pool in {t.pool.name: t.pool for t in targets if t.pool is not None}.values():
        # Each pool holds the GPUs of its targets at their `maxReplicaSets` (the others at their configured size).
        on_pool = [t.selected for t in targets if t.pool is not None and t.pool.name == pool.name]
        bounds = scaling.targets
        most = sum(
            t.recipe.gpus_per_replica_set * bounds[t.id].maxReplicaSets if t.id in bounds else t.gpus for t in on_pool
        )
        if most > pool.max_size * pool.gpus_per_node:
            key = f"autoscaling.targets.{next(t.id for t in on_pool if t.id in bounds)}.maxReplicaSets"
            why = f"the targets on pool {pool.name!r} need {most} GPUs at their maxReplicaSets; the pool holds "
            why += f"{pool.max_size} nodes x {pool.gpus_per_node} GPUs"
            allowed = f"fewer sets, or aws.nodePools maxSize >= {math.ceil(most / pool.gpus_per_node)}"
            errors.append(ConfigError(key, why, allowed))
    return errors


def plan_autoscaling(
    scaling: Optional[AutoscalingConfig],
    create: Optional[CreateCluster],
    region: Optional[str],
    targets: Sequence[PlannedTarget],
    pools: Sequence[ResolvedPool],
    prometheus_url: Optional[str],
    slo_ms: float,
    facts: AutoscalingFile,
) -> tuple[Optional[ServingScalingPlan], Optional[ClusterScalingPlan]]:
    """What scales the targets and what scales the pools (`create`: the cluster the stack creates, in `region`),
    or one `ConfigError`.
    `prometheus_url`: the stack's own Prometheus, if it runs one; `slo_ms`: the TTFT p50 SLO."""
    if scaling is None:
        return None, None
    url = scaling.prometheusUrl or prometheus_url
    chart = facts.clusterAutoscaler
    errors = _checks(scaling, create, targets, url, chart.imageTag)
    if errors:
        raise ConfigError.combined(errors)
    serving = cluster = None
    if scaling.targets:
        assert url is not None  # checked
        scaled = [
            o
            for t in targets
            if t.selected.id in scaling.targets
            for o in scaled_objects(t, scaling, url, facts, slo_ms)
        ]
        serving = ServingScalingPlan(facts.keda, scaling.installKeda, tuple(scaled))
    if create is not None and region is not None and scaling.clusterAutoscaler.enabled:
        tags = {p.name: MappingProxyType(node_group_autoscaler_tags(p, create.name)) for p in pools if p.managed}
        cluster = ClusterScalingPlan(
            chart=chart,
            policy=cluster_autoscaler_policy(create.name),
            values=cluster_autoscaler_values(create.name, region, chart.imageTag, chart.serviceAccount),
            pool_tags=MappingProxyType(tags),
        )
    return serving, cluster
