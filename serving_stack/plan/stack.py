"""The stack plan's types: the one immutable value `build_plan` returns and the parts it is made of.

Plain frozen dataclasses, no logic beyond `StackPlan.endpoints`; `stack_plan.build_plan` fills them.

One Region for the whole stack: the AWS provider's `aws:region` and the `aws` block's `region` agree, and
every Region the stack names exists (catalog/aws_regions.yaml).

`aws.region` decides where the stack builds (the provider it creates is pinned to it); `aws:region` is the
default provider's Region, which `pulumi` commands, SageMaker endpoints without `sagemaker.region` and any
resource on the default provider use. Two different values would split the stack across Regions without any
block saying so; `sagemaker.region` is the one setting that may name another Region on purpose.

Every problem of the `aws` cluster and system node group blocks, each with its key path: how the
cluster is sourced, its endpoint and VPC ranges, the Kubernetes version the Dynamo platform needs, and the
stack's Region. The node pools' checks are `pool_checks`.

The cluster's Kubernetes version against EKS's support calendar on a given day.

The stack creates its cluster with `upgradePolicy.supportType: STANDARD`, which EKS accepts only while the
version is in standard support (AWS-FACTS.md, corrections 2026-12): a version past that end is refused
before any resource, and one that ends within `warnDays` is a warning in summary.md and on stderr.

What must fit the checkpoints (sizes from catalog/checkpoints.yaml): the model-cache PVC holds every
checkpoint the download Job fetches, and a prewarm pod's memory limit holds the checkpoints it warms (page
cache is charged to the pod's cgroup: a smaller limit evicts what was just read).

The stack plan's cross-field checks: every problem the facts reveal in a config, in one `ConfigError`.

`stack_plan.build_plan` runs them first, so it plans only a config that is sound.

The stack plan: config + facts resolved once, before any resource, into one immutable value.

`build_plan` runs every check that needs the facts (catalog, instance types, SageMaker data) and
raises one `ConfigError` naming each bad key; what it returns is everything `__main__.py` wires into
components, so no value is derived twice and no component reads the config. The checks are in
`stack_checks`, the plan's types in `stack_plan_types`.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import ipaddress
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Optional, Union

import botocore
import botocore.session

from serving_stack.config.aws import AwsClusterConfig, AwsConfig
from serving_stack.config.secrets import missing_secrets
from serving_stack.config.serving import ModelCacheConfig
from serving_stack.config.stack import StackConfig
from serving_stack.config.types import quantity_value
from serving_stack.contract.outputs import NodePool, ServingEndpoint
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.aws import AwsRegions, DevicePluginPins, EksAddon
from serving_stack.facts.catalog import BYTES_PER_GB, CheckpointSizes
from serving_stack.facts.dates import EksVersionsFile
from serving_stack.facts.dates import today as current_date
from serving_stack.facts.name_limits import load_name_limits
from serving_stack.names import GPU_LABEL, GPU_TAINT
from serving_stack.plan.capacity import StackCapacity, plan_stack_capacity
from serving_stack.plan.gateway import StackGateway, check_gateway, plan_stack_gateway
from serving_stack.plan.model_cache import (
    GIB,
    ModelCacheSelection,
    PrewarmPool,
    PrewarmSettings,
    StoragePlan,
    cache_size,
    check_storage,
    checkpoint_bytes,
    loaded_checkpoints,
    plan_storage,
    select_model_cache,
)
from serving_stack.plan.monitoring import MonitoringPlan, deep_merge, monitoring_settings, plan_monitoring
from serving_stack.plan.name_checks import check_names
from serving_stack.plan.operability import OperabilityPlan, OperabilitySettings, operability_settings, plan_operability
from serving_stack.plan.placeholders import Placeholder, config_placeholders, refuse_unless_allowed
from serving_stack.plan.pools import (
    DraDriverPlan,
    LocalZoneSubnet,
    ManagedPoolSpec,
    ResolvedPool,
    check_pools,
    check_region,
    local_zone_subnets,
    plan_dra_driver,
    pool_cost_rows,
    resolve_pools,
)
from serving_stack.plan.pools import bounded_list as bounded_names
from serving_stack.plan.quantities import version_tuple
from serving_stack.plan.sagemaker import HuggingFaceSource, PlannedEndpoint, check_sagemaker, plan_sagemaker_endpoints
from serving_stack.plan.serving import (
    PlannedTarget,
    SelectedTarget,
    check_against_crd,
    place_targets,
    plan_prewarm,
    plan_serving_targets,
    platform_chart,
    render_download_job,
    render_model_cache_pvc,
    retired_warnings,
    select_targets,
    serving_settings,
)
from serving_stack.plan.watched_targets import watched_target


@dataclass(frozen=True)
class SystemNodes:
    instance_types: tuple[str, ...]
    min_size: int
    desired_size: int
    max_size: int
    disk_size_gib: int


@dataclass(frozen=True)
class AccessGrant:
    principal_arn: str
    policy: str
    namespaces: tuple[str, ...]


@dataclass(frozen=True)
class CreatedCluster:
    """A VPC and an EKS cluster the stack builds; Kubernetes resources go to it."""

    name: str
    kubernetes_version: str
    availability_zones: tuple[str, ...]
    vpc_cidr: str
    nat_gateway_per_az: bool
    endpoint_public_access_cidrs: tuple[str, ...]
    log_retention_days: int
    system_nodes: SystemNodes
    addons: tuple[EksAddon, ...]
    access_grants: tuple[AccessGrant, ...]
    local_zone_subnets: tuple[LocalZoneSubnet, ...] = ()


@dataclass(frozen=True)
class ExistingEks:
    """The AWS side of an existing cluster, for the GPU node groups the stack adds to it."""

    name: str
    vpc_id: str
    private_subnet_ids_by_az: Mapping[str, str]
    node_security_group_ids: tuple[str, ...]


@dataclass(frozen=True)
class KubeconfigCluster:
    """An existing cluster reached through an explicit kubeconfig context (never the ambient default)."""

    context: Optional[str]
    kubeconfig_path: Optional[str]
    eks: Optional[ExistingEks]


ClusterPlan = Union[CreatedCluster, KubeconfigCluster]


@dataclass(frozen=True)
class AwsAccount:
    region: str
    tags: Mapping[str, str]
    node_managed_policies: tuple[str, ...]


@dataclass(frozen=True)
class DevicePluginSet:
    """Which device plugins the pools need, each an explicit switch."""

    pins: DevicePluginPins  # the charts, pinned
    nvidia: bool  # the NVIDIA device plugin (off where the GPU Operator runs one)
    efa: bool  # the EFA device plugin, on the instance types below
    efa_instance_types: tuple[str, ...]  # the instance types of the EFA pools
    infiniband: bool  # the RDMA shared device plugin: some pool's fabric is InfiniBand
    dra_driver: Optional[DraDriverPlan] = None  # the NVIDIA DRA driver, for multi-node NVLink pools


@dataclass(frozen=True)
class PullSecretPlan:
    name: str
    server: str


@dataclass(frozen=True)
class DynamoPlatformPlan:
    """`install` False: the cluster already runs the platform (shared clusters); the stack leaves it alone."""

    install: bool
    namespace: str
    release_name: str
    chart_url: str
    values: Mapping[str, Any]


@dataclass(frozen=True)
class ServingPlan:
    """`hf_token`: the stack sets `hfToken` (a token Secret for the download Job); `retain_on_delete`: destroy
    forgets the namespace and the claim instead of deleting them."""

    namespace: str
    hf_token: bool
    pull_secret: Optional[PullSecretPlan]
    model_cache_claim: dict[str, Any]
    download_jobs: tuple[dict[str, Any], ...]
    retain_on_delete: bool
    prewarm_settings: PrewarmSettings
    prewarm_pools: tuple[PrewarmPool, ...]
    platform: DynamoPlatformPlan
    targets: tuple[PlannedTarget, ...]


@dataclass(frozen=True)
class StackPlan:
    aws: Optional[AwsAccount]
    cluster: ClusterPlan
    pools: tuple[ResolvedPool, ...]
    managed_pools: tuple[ManagedPoolSpec, ...]
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


def check_stack_region(config: StackConfig, default_region: Optional[str], regions: AwsRegions) -> list[ConfigError]:
    """`aws:region` (`default_region`) and `sagemaker.region` exist; `aws.region` equals `aws:region`.
    (`aws.region` itself is checked with its zones, `serving_stack.plan.pools.check_region`.)"""
    errors = [
        ConfigError(key, f"unknown Region {bounded(region)}", bounded_names(regions.regions))
        for key, region in (("aws:region", default_region), ("sagemaker.region", config.sagemaker.region))
        if region is not None and region not in regions.regions
    ]
    aws = config.aws
    if aws is not None and default_region is not None and aws.region != default_region:
        errors.append(
            ConfigError(
                "aws.region",
                f"{aws.region!r} differs from the stack's aws:region "
                f"{bounded(default_region)}: one Region for the stack",
                bounded(default_region, quote=False),
            )
        )
    return errors


def check_cluster(config: StackConfig, aws: AwsConfig, facts: Facts) -> list[ConfigError]:
    errors: list[ConfigError] = []
    source = config.kubernetes.cluster.source
    create = aws.cluster.create if aws.cluster else None
    if source == "eks" and create is None:
        errors.append(ConfigError("aws.cluster.create", "required when kubernetes.cluster.source is eks"))
    if create and source != "eks":
        errors.append(ConfigError("kubernetes.cluster.source", "must be eks when aws.cluster.create is set", "eks"))
    if create:
        errors += _check_public_access_cidrs(create.endpointPublicAccessCidrs)
        errors += _repeated("aws.cluster.create.availabilityZones", create.availabilityZones, "zone")
        errors += _repeated(
            "aws.cluster.create.accessEntries",
            [entry.principalArn for entry in create.accessEntries],
            "principal (EKS allows one access entry per principal)",
            ".principalArn",
        )
        if not 16 <= ipaddress.ip_network(create.vpcCidr, strict=False).prefixlen <= 20:
            errors.append(ConfigError("aws.cluster.create.vpcCidr", f"{create.vpcCidr} is not a /16../20 network"))
    # The cluster's version against the Dynamo platform chart the stack installs (a created cluster's always;
    # an existing cluster's when it says its version).
    minimum = facts.platform.chart.minKubernetes
    key, version = stated_version(aws.cluster)
    installs = create is not None or config.dynamo.platform.install
    if version is not None and installs and version_tuple(version) < version_tuple(minimum):
        errors.append(ConfigError(key, f"the Dynamo platform needs Kubernetes >= {minimum}, got {version}"))
    system = aws.systemNodeGroup
    errors += check_system_instance_types(system.instanceTypes, facts)
    if not system.minSize <= system.desiredSize <= system.maxSize:
        errors.append(
            ConfigError(
                "aws.systemNodeGroup.desiredSize",
                f"{system.desiredSize} is not between minSize {system.minSize} and maxSize {system.maxSize}",
            )
        )
    return errors + check_region(aws, facts.aws.regions)


@functools.cache
def ec2_instance_types() -> frozenset[str]:
    """Every EC2 instance type the pinned botocore's EC2 API model names (its `InstanceType` enum)."""
    return frozenset(botocore.session.get_session().get_service_model("ec2").shape_for("InstanceType").enum)


def check_system_instance_types(instance_types: list[str], facts: Facts) -> list[ConfigError]:
    """Each type exists (EC2's own list, from botocore) and one node group holds one architecture: EKS
    launches a node group with one AMI, x86_64 or arm64."""
    errors = []
    known = ec2_instance_types()
    graviton = load_name_limits().gravitonFamilies
    arches: dict[str, int] = {}
    for index, name in enumerate(instance_types):
        if name not in known:
            errors.append(
                ConfigError(
                    f"aws.systemNodeGroup.instanceTypes[{index}]",
                    f"{bounded(name)} is not an EC2 instance type (botocore {botocore.__version__}'s EC2 model)",
                )
            )
            continue
        gpu = facts.aws.instance_types.get(name)
        arch = gpu.arch if gpu is not None else ("arm64" if graviton.arm64(name) else "x86_64")
        first = arches.setdefault(arch, index)
        if len(arches) > 1 and first == index:
            other = next(a for a in arches if a != arch)
            errors.append(
                ConfigError(
                    f"aws.systemNodeGroup.instanceTypes[{index}]",
                    f"{name} is {arch} but instanceTypes[{arches[other]}] is {other}: one node group runs one AMI",
                    f"{other} types only",
                )
            )
    return errors


def _repeated(path: str, values: list[str], what: str, suffix: str = "") -> list[ConfigError]:
    """A value listed twice, named at its second index."""
    errors = []
    for index, value in enumerate(values):
        if value in values[:index]:
            first = values.index(value)
            errors.append(ConfigError(f"{path}[{index}]{suffix}", f"the same {what} as [{first}]: {bounded(value)}"))
    return errors


def _check_public_access_cidrs(cidrs: list[str]) -> list[ConfigError]:
    """The public endpoint's allow-list: not the whole Internet, public ranges only, within EKS's count."""
    limits = load_name_limits().eksPublicAccessCidrs
    key = "aws.cluster.create.endpointPublicAccessCidrs"
    errors = []
    if len(cidrs) > limits.maxEntries:
        errors.append(ConfigError(key, f"{len(cidrs)} ranges; EKS takes at most {limits.maxEntries} ({limits.source})"))
    for index, cidr in enumerate(cidrs):
        special = limits.non_public(cidr)
        if ipaddress.ip_network(cidr, strict=False).prefixlen == 0:
            errors.append(
                ConfigError(
                    f"{key}[{index}]",
                    f"{cidr} opens the API endpoint to the internet",
                    "specific CIDRs, or [] for a private endpoint",
                )
            )
        elif special is not None:
            errors.append(
                ConfigError(
                    f"{key}[{index}]",
                    f"{cidr} is inside {special}, which no caller of a public endpoint comes from "
                    f"({limits.nonPublicSource})",
                    "public ranges; private networks reach the cluster through its private endpoint",
                )
            )
    return errors


VERSION_KEY = "aws.cluster.create.kubernetesVersion"
EXISTING_VERSION_KEY = "aws.cluster.existing.kubernetesVersion"


def stated_version(cluster: Optional[AwsClusterConfig]) -> tuple[str, Optional[str]]:
    """(config key, version) of the cluster's Kubernetes version: a created cluster's, else the version an
    existing cluster states (None when it states none)."""
    if cluster is not None and cluster.create is not None:
        return VERSION_KEY, cluster.create.kubernetesVersion
    existing = cluster.existing if cluster is not None else None
    return EXISTING_VERSION_KEY, existing.kubernetesVersion if existing is not None else None


def _newest(calendar: EksVersionsFile, today: datetime.date) -> str:
    newest = calendar.newest_in_standard_support(today)
    return newest or f"none in catalog/eks_versions.yaml on {today.isoformat()}: add the calendar's next rows"


def check_cluster_version(
    config: StackConfig, calendar: EksVersionsFile, today: datetime.date
) -> tuple[list[ConfigError], list[str]]:
    """Errors for a created cluster's version that EKS does not take with STANDARD today; warnings for one
    that leaves standard support within `warnDays` (and for an existing cluster past it)."""
    cluster = config.aws.cluster if config.aws else None
    if cluster is None:
        return [], []
    create = cluster.create
    key, version = stated_version(cluster)
    if version is None:
        return [], []
    dates = calendar.versions.get(version)
    if dates is None:
        problem = f"no EKS support dates for Kubernetes {version} in catalog/eks_versions.yaml"
        return [ConfigError(key, problem, ", ".join(calendar.versions))], []
    if today < dates.released:
        return [ConfigError(key, f"EKS releases Kubernetes {version} on {dates.released}, after today ({today})")], []
    if create is None:
        if today >= dates.endOfExtendedSupport:
            problem = (
                f"Kubernetes {version} left EKS extended support on {dates.endOfExtendedSupport}, when EKS upgrades "
                "the cluster itself: it no longer runs this version"
            )
            return [ConfigError(key, problem, _newest(calendar, today))], []
        if today < dates.endOfStandardSupport:
            return [], []
        return [], [
            f"{key}: Kubernetes {version} left EKS standard support on {dates.endOfStandardSupport} "
            f"(extended support, charged, ends {dates.endOfExtendedSupport}); upgrade to {_newest(calendar, today)}"
        ]
    if today >= dates.endOfStandardSupport:
        return [
            ConfigError(
                VERSION_KEY,
                f"Kubernetes {version} left EKS standard support on {dates.endOfStandardSupport} (today is {today}) "
                "and the cluster's upgradePolicy is STANDARD, which EKS sets only in standard support",
                _newest(calendar, today),
            )
        ], []
    left = (dates.endOfStandardSupport - today).days
    if left > calendar.warnDays:
        return [], []
    return [], [
        f"{VERSION_KEY}: Kubernetes {version} leaves EKS standard support on {dates.endOfStandardSupport} ({left} days); "
        f"after that the stack refuses it: upgrade to {_newest(calendar, today)}"
    ]


def _too_small(key: str, value: str, what: str, repositories: list[str], sizes: CheckpointSizes) -> list[ConfigError]:
    needed = checkpoint_bytes(repositories, sizes)
    if quantity_value(value) >= needed:
        return []
    estimated = sum(sizes.size(repository).estimate for repository in repositories)
    basis = f", {estimated} of them estimates" if estimated else ""
    problem = (
        f"{value} cannot hold the {len(repositories)} checkpoints {what}: {needed / BYTES_PER_GB:g} GB "
        f"(catalog/checkpoints.yaml{basis})"
    )
    return [ConfigError(key, problem, f">= {math.ceil(needed / GIB)}Gi")]


def check_checkpoint_room(
    cache: ModelCacheConfig,
    size: str,
    downloaded: Iterable[str],
    loaded_by_nodes: Mapping[str, Iterable[str]],
    sizes: CheckpointSizes,
) -> list[ConfigError]:
    """The cache's size against every checkpoint downloaded; a configured `prewarm.memoryLimit` against the
    checkpoints the targets on one kind of node load (what one prewarm pod reads). Defaults are computed
    from the same sizes, so only a configured value can be too small."""
    errors = _too_small("modelCache.size", size, "the download Jobs fetch", list(dict.fromkeys(downloaded)), sizes)
    limit = cache.prewarm.memoryLimit
    if not cache.prewarm.enabled or limit is None:
        return errors
    for nodes, loaded in sorted(loaded_by_nodes.items()):
        warmed = list(dict.fromkeys(loaded))
        errors += _too_small(
            "modelCache.prewarm.memoryLimit",
            limit,
            f"a prewarm pod on {nodes} nodes reads",
            warmed,
            sizes,
        )
    return errors


@dataclass(frozen=True)
class _Resolved:
    """What `build_plan` selects, resolves and places, once, on its way to the plan."""

    cache: ModelCacheSelection
    selected: list[SelectedTarget]
    pools: dict[str, ResolvedPool]
    placements: dict[str, ResolvedPool]


def _resolve_and_check(
    config: StackConfig, facts: Facts, secrets: frozenset[str], default_region: Optional[str]
) -> tuple[StackConfig, _Resolved]:
    """The model cache, targets, pools and placements, each resolved once (`modelCache.size` set from the
    cache when the stack gives none), and every problem the facts reveal collected and raised once, as one
    `ConfigError`."""
    loaded = loaded_checkpoints(config.targets, facts.catalog)
    cache, errors = select_model_cache(config.modelCache, facts.catalog.model_cache, loaded)
    if config.modelCache.size is None:  # upstream's claim, raised to hold what the download Jobs fetch
        cache = dataclasses.replace(cache, size=cache_size(cache.size, cache.repos, facts.checkpoints))
        config = config.model_copy(update={"modelCache": config.modelCache.model_copy(update={"size": cache.size})})
    selected, target_errors = select_targets(config, facts.catalog, cache.repos)
    errors += target_errors
    by_nodes: dict[str, list[str]] = {}  # prewarm DaemonSets follow the workers' nodes (pool or GPU product)
    for target in selected:
        nodes = target.config.nodePool or target.recipe.gpu_products[0]
        by_nodes.setdefault(nodes, []).extend(target.recipe.checkpoints)
    errors += check_checkpoint_room(config.modelCache, cache.size, cache.repos, by_nodes, facts.checkpoints)
    errors += check_stack_region(config, default_region, facts.aws.regions)
    unknown_gpus = config.demand.unknown_gpu_types(list(facts.aws.gpus)) if config.demand else []
    if unknown_gpus:  # with explicit targets too: the capacity summary reads the demand
        errors.append(
            ConfigError("demand.gpuTypes", f"unknown GPU type(s) {', '.join(unknown_gpus)}", ", ".join(facts.aws.gpus))
        )
    errors += missing_secrets(config, secrets)
    errors += check_sagemaker(config.sagemaker, facts)
    errors += check_gateway(config)
    errors += check_names(config, facts)
    aws = config.aws
    pools: dict[str, ResolvedPool] = {}
    placements: dict[str, ResolvedPool] = {}
    if aws is None:
        if config.kubernetes.cluster.source == "eks":
            errors.append(ConfigError("aws", "required when kubernetes.cluster.source is eks"))
        errors += place_targets(config, selected, {}, facts.aws)[1]
    else:
        aws_errors = (
            check_cluster(config, aws, facts)
            + check_pools(aws, facts.aws)
            + check_storage(config, aws, cache.size, facts.aws.regions)
        )
        errors += aws_errors
        if not aws_errors:
            pools = resolve_pools(config, facts)
            placements, placement_errors = place_targets(config, selected, pools, facts.aws)
            errors += placement_errors
    if errors:
        raise ConfigError.combined(errors)
    return config, _Resolved(cache, selected, pools, placements)


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
    written = config.model_dump(mode="json", exclude_unset=True)
    config, resolved = _resolve_and_check(config, facts, secrets, default_region)
    version_errors, dated_warnings = check_cluster_version(config, facts.eks_versions, today or current_date())
    if version_errors:
        raise ConfigError.combined(version_errors)
    cache_plan, selected, pools, placements = resolved.cache, resolved.selected, resolved.pools, resolved.placements
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
    check_against_crd(targets_deployed, facts.platform)
    crd_warning = facts.platform.crd.warning(facts.platform.chart)
    crd_warnings = (crd_warning,) if crd_warning and targets else ()
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
        download_jobs=tuple(
            render_download_job(job, cache.download, settings, facts.downloader.lines()) for job in cache_plan.jobs
        ),
        retain_on_delete=cache.retainOnDelete,
        prewarm_settings=PrewarmSettings.of(cache.prewarm, config.kubernetes.namespace),
        prewarm_pools=tuple(plan_prewarm(config, targets, facts.checkpoints)),
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
    placeholders = config_placeholders(written, facts.placeholders) + tuple(
        p for e in endpoints if isinstance(e.source, HuggingFaceSource) for p in e.source.placeholders
    )
    refuse_unless_allowed(placeholders, allow_placeholders)
    contested = [
        f"aws.nodePools: pool {pool.name!r} ({pool.instance_type}) uses a CONTESTED EFA layout: "
        f"{facts.aws.instance_types[pool.instance_type].contested_layout} (catalog/instance_types.yaml)"
        for pool in pool_list
        if pool.instance_type and pool.efa_layout and facts.aws.instance_types[pool.instance_type].contested_layout
    ]
    return StackPlan(
        warnings=(*dated_warnings, *contested, *retired_warnings(selected, facts.catalog), *crd_warnings),
        placeholders=placeholders,
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
