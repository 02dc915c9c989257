"""The stack plan: config + facts resolved once, before any resource, into one immutable `StackPlan`.

`build_plan` selects the model cache, the targets and the pools, places the targets and collects every problem
the facts reveal into one `ConfigError` naming each bad key; then each planner turns its own config block into
its part of the plan. The config is only read: what a step resolves (a cache size, a pool, a rendered graph)
lives in the plan, which is all `__main__.py` wires into components.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Optional

from serving_stack.config.secrets import missing_secrets
from serving_stack.config.serving import DynamoConfig, ModelCacheConfig, PlatformConfig
from serving_stack.config.stack import StackConfig
from serving_stack.contract.outputs import NodePool, ServingEndpoint
from serving_stack.errors import ConfigError
from serving_stack.facts import Facts
from serving_stack.facts.dates import today as current_date
from serving_stack.facts.response_formats import load_response_formats
from serving_stack.plan.autoscaling import ClusterScalingPlan, ServingScalingPlan, plan_autoscaling
from serving_stack.plan.cluster import (
    AwsAccount,
    ClusterPlan,
    CreatedCluster,
    DevicePluginSet,
    check_cluster,
    check_cluster_version,
    check_stack_region,
    check_subnet_room,
    plan_cluster,
    plan_device_plugins,
)
from serving_stack.plan.failover import gateway_fallback_errors
from serving_stack.plan.gateway import StackGateway, check_gateway, plan_stack_gateway
from serving_stack.plan.model_cache import (
    PROGRAM_FILE,
    PrewarmPool,
    StoragePlan,
    check_checkpoint_room,
    check_storage,
    host_state_dir,
    loaded_checkpoints,
    plan_storage,
    prewarm_pools,
    render_download_job,
    render_model_cache_pvc,
    select_model_cache,
)
from serving_stack.plan.monitoring import (
    MonitoringPlan,
    deep_merge,
    plan_monitoring,
    watched_target,
)
from serving_stack.plan.name_checks import check_names
from serving_stack.plan.operability import OperabilityPlan, plan_operability
from serving_stack.plan.placeholders import Placeholder, config_placeholders, refuse_unless_allowed
from serving_stack.plan.pools import ResolvedPool, check_pools, pool_cost_rows, resolve_pool
from serving_stack.plan.sagemaker import HuggingFaceSource, PlannedEndpoint, check_sagemaker, plan_sagemaker_endpoints
from serving_stack.plan.serving import (
    PlannedTarget,
    place_targets,
    plan_targets,
    retired_warnings,
    select_targets,
)
from serving_stack.plan.throughput import TargetTokenCost


@dataclass(frozen=True)
class DynamoPlatformPlan:
    """The `dynamo-platform` release: `config.install` False, the cluster runs it already and the stack leaves it."""

    config: PlatformConfig  # install, namespace, releaseName
    chart_url: str  # the pinned (or configured) chart version's tarball
    values: Mapping[str, Any]  # catalog/platform.yaml's, monitoring's, then the stack's own (which win)


@dataclass(frozen=True)
class ServingPlan:
    """`hf_token`: the stack sets `hfToken` (a token Secret for the download Jobs)."""

    namespace: str
    create_namespace: bool  # `kubernetes.createNamespace`
    namespace_pod_security: Optional[str]  # `kubernetes.namespacePodSecurity` (an existing namespace's level)
    dynamo: DynamoConfig
    model_cache: ModelCacheConfig
    hf_token: bool
    model_cache_claim: dict[str, Any]
    download_jobs: tuple[dict[str, Any], ...]
    prewarm_program: str  # prewarm/prewarm.py: shipped in a ConfigMap, its digest on the gated workers
    prewarm_host_dir: str  # node-local readiness files of this stack's prewarm (`host_state_dir`)
    prewarm_pools: tuple[PrewarmPool, ...]
    platform: DynamoPlatformPlan
    targets: tuple[PlannedTarget, ...]


@dataclass(frozen=True)
class StackCapacity:
    """What 1M output tokens cost where each target runs (the GPUs a data file prices), and what scales."""

    token_costs: tuple[TargetTokenCost, ...]
    serving_scaling: Optional[ServingScalingPlan]  # KEDA and the targets' ScaledObjects
    cluster_scaling: Optional[ClusterScalingPlan]  # cluster-autoscaler for the GPU pools
    ended_prices: tuple[str, ...] = ()  # prices past their reviewBy, left out of every cost


@dataclass(frozen=True)
class StackPlan:
    aws: Optional[AwsAccount]
    cluster: ClusterPlan
    pools: tuple[ResolvedPool, ...]
    managed_pools: tuple[ResolvedPool, ...]
    device_plugins: Optional[DevicePluginSet]
    storage: Optional[StoragePlan]
    serving: ServingPlan
    sagemaker: tuple[PlannedEndpoint, ...]
    pool_costs: tuple[NodePool, ...]
    monitoring: Optional[MonitoringPlan]
    operability: Optional[OperabilityPlan]
    capacity: StackCapacity
    gateway: Optional[StackGateway] = None
    # For the person deploying: what renders but needs a decision (a pin ageing out, a retired target selected).
    warnings: tuple[str, ...] = ()
    placeholders: tuple[Placeholder, ...] = ()

    @property
    def endpoints(self) -> list[ServingEndpoint]:
        return [t.endpoint for t in self.serving.targets] + [e.endpoint for e in self.sagemaker]


def build_plan(
    config: StackConfig,
    facts: Facts,
    *,
    default_region: Optional[str] = None,
    secrets: frozenset[str] = frozenset(),
    today: Optional[datetime.date] = None,
    allow_placeholders: bool = True,
) -> StackPlan:
    """The whole plan, or one `ConfigError` naming every bad key. `default_region` is the stack's
    `aws:region`, used for SageMaker endpoints when neither `aws.region` nor `sagemaker.region` is set;
    `secrets` are the secret keys the stack sets (their values never reach the plan). `today` (default:
    `NEMOTRON_TODAY` or the clock) dates the EKS version; `allow_placeholders` is False for a real `up`,
    which then refuses the first placeholder value (`placeholders`)."""
    aws, cache_config, namespace = config.aws, config.modelCache, config.kubernetes.namespace
    # Selected, resolved and placed once; every problem the facts reveal is collected and raised once.
    loaded = loaded_checkpoints(config.targets, facts.catalog)
    cache, errors = select_model_cache(cache_config, facts.catalog.model_cache, facts.checkpoints, loaded)
    size = cache.size
    selected, target_errors = select_targets(config.targets, facts.catalog, cache.repos)
    errors += target_errors
    by_nodes: dict[str, list[str]] = {}  # prewarm DaemonSets follow the workers' nodes (pool or GPU product)
    for target in selected:
        by_nodes.setdefault(target.config.nodePool or target.recipe.gpu_products[0], []).extend(
            target.recipe.checkpoints
        )
    errors += check_checkpoint_room(cache_config, size, cache.repos, by_nodes, facts.checkpoints)
    errors += check_stack_region(aws, config.sagemaker.region, default_region, facts.aws.regions)
    if config.demand:  # with explicit targets too: the capacity summary reads the demand
        errors += config.demand.check_gpu_types(facts.aws.gpus)
    errors += missing_secrets(config, secrets)
    errors += check_sagemaker(config.sagemaker, facts)
    errors += check_gateway(config)
    errors += check_names(config, facts)
    pools: dict[str, ResolvedPool] = {}
    placements: dict[str, ResolvedPool] = {}
    room_errors, unchecked_room = check_subnet_room(aws, facts.aws.regions)
    if aws is None:  # StackConfig refuses a cluster.source eks without it
        errors += place_targets(selected, None, facts.aws)[1]
    else:
        aws_errors = check_cluster(aws, config.dynamo.platform.install, facts)
        aws_errors += check_pools(aws, facts.aws) + check_storage(cache_config, aws, size, facts.aws.regions)
        aws_errors += room_errors
        errors += aws_errors
        if not aws_errors:
            pools = {pool.name: resolve_pool(pool, aws, facts.aws) for pool in aws.nodePools}
            placements, placement_errors = place_targets(selected, pools, facts.aws)
            errors += placement_errors
    if errors:
        raise ConfigError.combined(errors)
    today = today or current_date()
    version_errors, dated_warnings = check_cluster_version(aws.cluster if aws else None, facts.eks_versions, today)
    if version_errors:
        raise ConfigError.combined(version_errors)

    dynamo, scaling = config.dynamo, config.autoscaling
    endpoints = plan_sagemaker_endpoints(config, facts, default_region=aws.region if aws else default_region)
    prewarm_program = PROGRAM_FILE.read_text()
    download_jobs = tuple(
        render_download_job(job, cache_config.download, namespace, dynamo.imagePullSecret, facts.downloader.lines())
        for job in cache.jobs
    )
    download_deadline = max(int(job["spec"]["activeDeadlineSeconds"]) for job in download_jobs)
    targets = plan_targets(
        selected,
        placements,
        namespace,
        dynamo,
        cache_config.prewarm,
        download_deadline,
        scaling.targets if scaling else {},
        facts,
        prewarm_program,
        today,
    )
    checks = config.operability
    criteria = facts.catalog.criteria
    monitoring = None
    if config.monitoring.enabled:
        watched = [watched_target(t.selected.id, t.dgd, t.selected.recipe.entry.performance.ttftP50Ms) for t in targets]
        monitoring = plan_monitoring(
            config.monitoring,
            namespace,
            watched,
            criteria,
            config.gateway.router.timeoutSeconds,
            facts.monitoring,
            facts.metrics,
            facts.dashboards,
            checks.canary if checks.canary.enabled else None,
        )
    pool_list = tuple(pools.values())
    slo = config.demand.slo if config.demand and config.demand.slo else None
    serving_scaling, cluster_scaling = plan_autoscaling(
        scaling,
        aws.cluster.create if aws and aws.cluster else None,
        aws.region if aws else None,
        targets,
        pool_list,
        monitoring.prometheus_url if monitoring else None,
        slo.maxTtftP50Ms if slo else criteria.maxTtftP50Ms,
        facts.autoscaling,
    )
    platform = dynamo.platform
    values = deep_merge(facts.platform.values, platform.values)
    if monitoring is not None:
        values = deep_merge(monitoring.dynamo_platform_values, values)  # the stack's own values win
    chart_url = facts.platform.chart.url.format(version=platform.chartVersion or facts.platform.chart.version)
    serving = ServingPlan(
        namespace=namespace,
        create_namespace=config.kubernetes.createNamespace,
        namespace_pod_security=config.kubernetes.namespacePodSecurity,
        dynamo=dynamo,
        model_cache=cache_config,
        hf_token="hfToken" in secrets,
        model_cache_claim=render_model_cache_pvc(
            facts.catalog.model_cache.claim, size, cache_config.storageClassName, namespace
        ),
        download_jobs=download_jobs,
        prewarm_program=prewarm_program,
        prewarm_host_dir=host_state_dir(namespace),
        prewarm_pools=tuple(
            prewarm_pools(
                cache_config.prewarm, [(t.dgd, t.selected.recipe.checkpoints) for t in targets], facts.checkpoints
            )
        ),
        platform=DynamoPlatformPlan(platform, chart_url, MappingProxyType(values)),
        targets=tuple(targets),
    )
    cluster = plan_cluster(aws, config.kubernetes.cluster, facts, pool_list)
    gateway = plan_stack_gateway(
        config.gateway,
        namespace,
        [t.endpoint for t in targets],
        endpoints,
        facts.gateway,
        isinstance(cluster, CreatedCluster),
    )
    if gateway is not None:
        fallback_errors = gateway_fallback_errors(
            gateway.routing, targets, endpoints, facts.lmi, load_response_formats()
        )
        if fallback_errors:
            raise ConfigError.combined(fallback_errors)
    placeholders = config_placeholders(config.model_dump(mode="json", exclude_unset=True), facts.placeholders)
    placeholders += tuple(
        p for e in endpoints if isinstance(e.source, HuggingFaceSource) for p in e.source.placeholders
    )
    refuse_unless_allowed(placeholders, allow_placeholders)
    contested = [
        f"aws.nodePools: pool {pool.name!r} ({pool.instance_type}) uses a CONTESTED EFA layout: "
        f"{facts.aws.instance_types[pool.instance_type].contested_layout} (catalog/instance_types.yaml)"
        for pool in pool_list
        if pool.instance_type and pool.efa_layout and facts.aws.instance_types[pool.instance_type].contested_layout
    ]
    crd_warning = facts.platform.crd.warning(facts.platform.chart)
    return StackPlan(
        warnings=(
            *dated_warnings,
            *contested,
            *unchecked_room,
            *retired_warnings(selected, facts.catalog),
            *((crd_warning,) if crd_warning and targets else ()),
        ),
        placeholders=placeholders,
        aws=AwsAccount(aws.region, MappingProxyType(dict(aws.tags)), tuple(facts.aws.platform.nodeManagedPolicies))
        if aws
        else None,
        cluster=cluster,
        pools=pool_list,
        managed_pools=tuple(p for p in pool_list if p.managed),
        device_plugins=plan_device_plugins(aws, pool_list, facts),
        storage=plan_storage(aws, cache_config.storageClassName, size, facts.aws),
        serving=serving,
        sagemaker=tuple(endpoints),
        pool_costs=tuple(pool_cost_rows(pool_list)),
        monitoring=monitoring,
        capacity=StackCapacity(
            tuple(t.token_cost for t in targets if t.token_cost),
            serving_scaling,
            cluster_scaling,
            facts.capacity_prices.ended_capacity_blocks(today),
        ),
        gateway=gateway,
        operability=plan_operability(
            checks,
            targets,
            namespace,
            serving.model_cache_claim["metadata"]["name"],
            criteria,
            monitoring.release_label if monitoring else None,
            facts.platform.readiness.imagePullAllowanceSeconds,
        ),
    )
