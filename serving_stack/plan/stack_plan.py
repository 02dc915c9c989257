"""The stack plan: config + facts resolved once, before any resource, into one immutable value.

`build_plan` runs every check that needs the facts (catalog, instance types, SageMaker data) and
raises one `ConfigError` naming each bad key; what it returns is everything `__main__.py` wires into
components, so no value is derived twice and no component reads the config. The checks are in
`stack_checks`, the plan's types in `stack_plan_types`.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Optional

from serving_stack.config.stack import StackConfig
from serving_stack.facts import Facts
from serving_stack.names import GPU_LABEL, GPU_TAINT
from serving_stack.plan.costs import pool_cost_rows
from serving_stack.plan.dra import plan_dra_driver
from serving_stack.plan.gateway_stack import plan_stack_gateway
from serving_stack.plan.manifests import render_download_job, render_model_cache_pvc
from serving_stack.plan.model_cache import select_model_cache
from serving_stack.plan.monitoring import MonitoringPlan, deep_merge, monitoring_settings, plan_monitoring
from serving_stack.plan.operability import OperabilitySettings, operability_settings, plan_operability
from serving_stack.plan.placement import place_targets
from serving_stack.plan.pools import ManagedPoolSpec, ResolvedPool, local_zone_subnets, resolve_pools
from serving_stack.plan.prewarm import PrewarmSettings
from serving_stack.plan.sagemaker import plan_sagemaker_endpoints
from serving_stack.plan.serving import (
    PlannedTarget,
    plan_prewarm,
    plan_serving_targets,
    platform_chart,
    serving_settings,
)
from serving_stack.plan.stack_capacity import plan_stack_capacity
from serving_stack.plan.stack_checks import check_stack
from serving_stack.plan.stack_plan_types import (
    AccessGrant,
    AwsAccount,
    ClusterPlan,
    CreatedCluster,
    DevicePluginSet,
    DynamoPlatformPlan,
    ExistingEks,
    KubeconfigCluster,
    PullSecretPlan,
    ServingPlan,
    StackPlan,
    SystemNodes,
)
from serving_stack.plan.storage import plan_storage
from serving_stack.plan.targets import select_targets
from serving_stack.plan.watched_targets import watched_target


def _cluster(config: StackConfig, facts: Facts, pools: Sequence[ResolvedPool]) -> ClusterPlan:
    aws, access = config.aws, config.kubernetes.cluster
    create = aws.cluster.create if aws and aws.cluster else None
    if access.source == "eks" and aws is not None and create is not None:
        system = aws.systemNodeGroup
        return CreatedCluster(
            name=create.name,
            kubernetes_version=create.kubernetesVersion,
            availability_zones=tuple(create.availabilityZones),
            vpc_cidr=create.vpcCidr,
            nat_gateway_per_az=create.natGatewayPerAz,
            endpoint_public_access_cidrs=tuple(create.endpointPublicAccessCidrs),
            log_retention_days=create.controlPlaneLogRetentionDays,
            system_nodes=SystemNodes(
                tuple(system.instanceTypes), system.minSize, system.desiredSize, system.maxSize, system.diskSizeGiB
            ),
            addons=tuple(facts.aws.platform.eksAddons.cluster),
            access_grants=tuple(
                AccessGrant(e.principalArn, e.accessPolicy, tuple(e.namespaces)) for e in create.accessEntries
            ),
            local_zone_subnets=local_zone_subnets(pools),
        )
    existing = aws.cluster.existing if aws and aws.cluster else None
    eks = None
    if existing is not None:
        eks = ExistingEks(
            existing.name,
            existing.vpcId,
            MappingProxyType(dict(existing.privateSubnetIds)),
            tuple(existing.nodeSecurityGroupIds),
        )
    return KubeconfigCluster(context=access.context, kubeconfig_path=access.kubeconfigPath, eks=eks)


def _device_plugins(config: StackConfig, pools: Sequence[ResolvedPool], facts: Facts) -> Optional[DevicePluginSet]:
    if config.aws is None or not pools:
        return None
    wanted = config.aws.devicePlugins
    efa_types = [p.instance_type for p in pools if p.fabric == "efa" and p.instance_type] if wanted.efa else []
    return DevicePluginSet(
        pins=facts.aws.platform.devicePlugins,
        nvidia=wanted.nvidia,
        efa=bool(efa_types),
        efa_instance_types=tuple(dict.fromkeys(efa_types)),
        infiniband=wanted.rdmaSharedDevice and any(p.fabric == "ib" for p in pools),
        dra_driver=plan_dra_driver(wanted.draDriver, pools, facts.aws.platform.draDriver),
    )


def _monitoring(
    config: StackConfig, targets: Sequence[PlannedTarget], facts: Facts, operability: OperabilitySettings
) -> Optional[MonitoringPlan]:
    if not config.monitoring.enabled:
        return None
    watched = [watched_target(t.selected.id, t.dgd, t.selected.recipe.entry.performance.ttftP50Ms) for t in targets]
    criteria = facts.catalog.criteria
    return plan_monitoring(
        monitoring_settings(config.monitoring, facts.monitoring),
        config.kubernetes.namespace,
        watched,
        criteria.maxTtftP50Ms,
        criteria.minTokensPerSecondPerUser,
        GPU_LABEL,
        GPU_TAINT,
        facts.monitoring,
        facts.metrics,
        facts.dashboards,
        operability.canary_alerting,
    )


def _with_cache_size(config: StackConfig, facts: Facts) -> StackConfig:
    """`modelCache.size` resolved once: the configured size, else the upstream claim's."""
    if config.modelCache.size is not None:
        return config
    size = select_model_cache(config.modelCache, facts.catalog.model_cache)[0].size
    return config.model_copy(update={"modelCache": config.modelCache.model_copy(update={"size": size})})


def build_plan(
    config: StackConfig,
    facts: Facts,
    *,
    default_region: Optional[str] = None,
    secrets: frozenset[str] = frozenset(),
) -> StackPlan:
    """The whole plan, or one `ConfigError` naming every bad key. `default_region` is the stack's
    `aws:region`, used for SageMaker endpoints when neither `aws.region` nor `sagemaker.region` is set;
    `secrets` are the secret keys the stack sets (their values never reach the plan)."""
    config = _with_cache_size(config, facts)
    check_stack(config, facts, secrets, default_region)
    cache_plan = select_model_cache(config.modelCache, facts.catalog.model_cache)[0]
    selected, _ = select_targets(config, facts.catalog, cache_plan.repos)
    pools = resolve_pools(config, facts)
    placements = place_targets(config, selected, pools, facts.aws)[0] if config.aws else {}
    region = config.aws.region if config.aws else default_region
    endpoints = plan_sagemaker_endpoints(config, facts, default_region=region)
    targets = plan_serving_targets(config, selected, placements, facts)
    settings, cache = serving_settings(config), config.modelCache
    chart_url, values = platform_chart(config, facts.platform)
    checks = operability_settings(config.operability)
    monitoring = _monitoring(config, targets, facts, checks)
    if monitoring is not None:
        values = deep_merge(monitoring.dynamo_platform_values, values)  # the stack's own values win
    targets_deployed, capacity = plan_stack_capacity(
        config, facts, targets, tuple(pools.values()), monitoring.prometheus_url if monitoring else None
    )
    platform = config.dynamo.platform
    serving = ServingPlan(
        namespace=settings.namespace,
        hf_token="hfToken" in secrets,
        pull_secret=PullSecretPlan(config.dynamo.imagePullSecret, config.dynamo.registry)
        if config.dynamo.imagePullSecret
        else None,
        model_cache_claim=render_model_cache_pvc(
            facts.catalog.model_cache.claim, cache_plan.size, cache.storageClassName, settings
        ),
        download_jobs=tuple(render_download_job(job, cache.download, settings) for job in cache_plan.jobs),
        retain_on_delete=cache.retainOnDelete,
        prewarm_settings=PrewarmSettings.of(cache.prewarm, config.kubernetes.namespace),
        prewarm_pools=tuple(plan_prewarm(config, targets)),
        platform=DynamoPlatformPlan(
            platform.install, platform.namespace, platform.releaseName, chart_url, MappingProxyType(values)
        ),
        targets=targets_deployed,
    )
    account = None
    if config.aws is not None:
        account = AwsAccount(
            config.aws.region, MappingProxyType(dict(config.aws.tags)), tuple(facts.aws.platform.nodeManagedPolicies)
        )
    pool_list = tuple(pools.values())
    cluster = _cluster(config, facts, pool_list)
    gateway = plan_stack_gateway(
        config.gateway,
        settings.namespace,
        [t.endpoint for t in targets],
        [e.endpoint for e in endpoints],
        facts.gateway,
        isinstance(cluster, CreatedCluster),
    )
    return StackPlan(
        aws=account,
        cluster=cluster,
        pools=pool_list,
        managed_pools=tuple(ManagedPoolSpec.of(p) for p in pool_list if p.managed),
        device_plugins=_device_plugins(config, pool_list, facts),
        storage=plan_storage(config, facts),
        serving=serving,
        sagemaker=tuple(endpoints),
        pool_costs=tuple(pool_cost_rows(pool_list)),
        monitoring=monitoring,
        capacity=capacity,
        gateway=gateway,
        operability=plan_operability(
            checks,
            targets,
            serving.namespace,
            serving.model_cache_claim["metadata"]["name"],
            facts.catalog.criteria,
            monitoring.release_label if monitoring else None,
            facts.platform.readiness.imagePullAllowanceSeconds,
        ),
    )
