"""The cluster the stack reaches (one it creates, or an existing one through an explicit kubeconfig context) and
the device plugins its GPU pools need; checked against EC2's instance types, EKS's limits and support calendar, the
Dynamo platform's minimum Kubernetes and the stack's one Region (`aws.region` must equal `aws:region`, the default
provider's). A created cluster runs `upgradePolicy.supportType: STANDARD`, which EKS accepts only in standard
support (AWS-FACTS.md, corrections 2026-12): a version past it is refused, one ending within `warnDays` warned of.
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional, Union

import botocore
import botocore.session

from serving_stack.config.aws import AwsClusterConfig, AwsConfig, CreateCluster, ExistingCluster, SystemNodeGroupConfig
from serving_stack.config.serving import ClusterAccess
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.aws import AwsRegions, DevicePluginPins, DraDriverChart, EksAddon, version_key
from serving_stack.facts.dates import EksVersionsFile
from serving_stack.facts.name_limits import load_name_limits
from serving_stack.plan.pools import (
    MAX_LOCAL_ZONE_SUBNETS,
    VERSION_KEY,
    LocalZoneSubnet,
    ResolvedPool,
    bounded_list,
    check_region,
    stated_version,
)


@dataclass(frozen=True)
class CreatedCluster:
    """A VPC and an EKS cluster the stack builds, as `aws.cluster.create` shapes them; Kubernetes resources go
    to it."""

    create: CreateCluster
    system_nodes: SystemNodeGroupConfig
    addons: tuple[EksAddon, ...]
    local_zone_subnets: tuple[LocalZoneSubnet, ...] = ()


@dataclass(frozen=True)
class KubeconfigCluster:
    """An existing cluster reached through an explicit kubeconfig context (never the ambient default); `eks`:
    its AWS side, for the GPU node groups the stack adds to it."""

    context: Optional[str]
    kubeconfig_path: Optional[str]
    eks: Optional[ExistingCluster]


ClusterPlan = Union[CreatedCluster, KubeconfigCluster]


@dataclass(frozen=True)
class AwsAccount:
    region: str
    tags: Mapping[str, str]
    node_managed_policies: tuple[str, ...]


@dataclass(frozen=True)
class DraDriverPlan:
    """The NVIDIA DRA driver's placement: ComputeDomains on multi-node NVLink pools (GPUs stay with the device
    plugin)."""

    chart: DraDriverChart
    pools: tuple[str, ...]


@dataclass(frozen=True)
class DevicePluginSet:
    """Which device plugins the pools need, each an explicit switch."""

    pins: DevicePluginPins  # the charts, pinned
    nvidia: bool  # the NVIDIA device plugin (off where the GPU Operator runs one)
    efa: bool  # the EFA device plugin, on the instance types below
    efa_instance_types: tuple[str, ...]  # the instance types of the EFA pools
    infiniband: bool  # the RDMA shared device plugin: some pool's fabric is InfiniBand
    dra_driver: Optional[DraDriverPlan] = None  # the NVIDIA DRA driver, for multi-node NVLink pools


def plan_cluster(
    aws: Optional[AwsConfig], access: ClusterAccess, facts: Facts, pools: Sequence[ResolvedPool]
) -> ClusterPlan:
    cluster = aws.cluster if aws else None
    if access.source == "eks" and aws is not None and cluster is not None and cluster.create is not None:
        addons = tuple(facts.aws.platform.eksAddons.cluster)
        # One subnet per managed Local Zone pool without a configured subnet, in config order (the order gives
        # each its CIDR: add Local Zone pools at the end).
        subnets = tuple(
            LocalZoneSubnet(p.name, p.availability_zone)
            for p in pools
            if p.managed and p.local_zone and p.availability_zone and p.subnet_id is None
        )
        return CreatedCluster(cluster.create, aws.systemNodeGroup, addons, subnets)
    existing = cluster.existing if cluster else None
    return KubeconfigCluster(context=access.context, kubeconfig_path=access.kubeconfigPath, eks=existing)


def plan_device_plugins(
    aws: Optional[AwsConfig], pools: Sequence[ResolvedPool], facts: Facts
) -> Optional[DevicePluginSet]:
    if aws is None or not pools:
        return None
    wanted = aws.devicePlugins
    efa_types = [p.instance_type for p in pools if p.fabric == "efa" and p.instance_type] if wanted.efa else []
    domains = tuple(pool.name for pool in pools if pool.compute_domains)
    return DevicePluginSet(
        pins=facts.aws.platform.devicePlugins,
        nvidia=wanted.nvidia,
        efa=bool(efa_types),
        efa_instance_types=tuple(dict.fromkeys(efa_types)),
        infiniband=wanted.rdmaSharedDevice and any(p.fabric == "ib" for p in pools),
        # None when no pool needs ComputeDomains, or the cluster runs the driver already (`draDriver` off).
        dra_driver=DraDriverPlan(facts.aws.platform.draDriver, domains) if wanted.draDriver and domains else None,
    )


def check_stack_region(
    aws: Optional[AwsConfig], sagemaker_region: Optional[str], default_region: Optional[str], regions: AwsRegions
) -> list[ConfigError]:
    """`aws:region` (`default_region`) and `sagemaker.region` exist; `aws.region` equals `aws:region`
    (`aws.region` itself is checked with its zones, `plan.pools.check_region`)."""
    errors = [
        ConfigError(key, f"unknown Region {bounded(region)}", bounded_list(regions.regions))
        for key, region in (("aws:region", default_region), ("sagemaker.region", sagemaker_region))
        if region is not None and region not in regions.regions
    ]
    if aws is not None and default_region is not None and aws.region != default_region:
        why = f"{aws.region!r} differs from the stack's aws:region {bounded(default_region)}: one Region for the stack"
        errors.append(ConfigError("aws.region", why, bounded(default_region, quote=False)))
    return errors


def check_cluster(aws: AwsConfig, installs_platform: bool, facts: Facts) -> list[ConfigError]:
    """The `aws` cluster and system node group blocks (how the cluster is sourced is `StackConfig`'s check): its
    endpoint and VPC ranges, the Kubernetes version the Dynamo platform needs (`installs_platform`), and the Region
    and zones."""
    errors: list[ConfigError] = []
    create = aws.cluster.create if aws.cluster else None
    if create and aws.nodePools and not aws.devicePlugins.nvidia:
        why = "false on a cluster this stack creates: nothing else there advertises nvidia.com/gpu (no GPU Operator), "
        allowed = "true (false only on an existing cluster whose GPU Operator runs the plugin)"
        errors.append(
            ConfigError("aws.devicePlugins.nvidia", why + "so no GPU pod of its pools would schedule", allowed)
        )
    if create:
        errors += _check_public_access_cidrs(create.endpointPublicAccessCidrs)
        errors += _repeated("aws.cluster.create.availabilityZones", create.availabilityZones, "zone")
        principals = [entry.principalArn for entry in create.accessEntries]
        what = "principal (EKS allows one access entry per principal)"
        errors += _repeated("aws.cluster.create.accessEntries", principals, what, ".principalArn")
        if not 16 <= ipaddress.ip_network(create.vpcCidr, strict=False).prefixlen <= 20:
            errors.append(ConfigError("aws.cluster.create.vpcCidr", f"{create.vpcCidr} is not a /16../20 network"))
    # The cluster's version against the platform chart the stack installs (a created cluster's always; an
    # existing cluster's when it says its version).
    minimum = facts.platform.chart.minKubernetes
    key, version = stated_version(aws.cluster)
    if version and (create or installs_platform) and version_key(version) < version_key(minimum):
        errors.append(ConfigError(key, f"the Dynamo platform needs Kubernetes >= {minimum}, got {version}"))
    system = aws.systemNodeGroup
    errors += check_system_instance_types(system.instanceTypes, facts)
    if not system.minSize <= system.desiredSize <= system.maxSize:
        problem = f"{system.desiredSize} is not between minSize {system.minSize} and maxSize {system.maxSize}"
        errors.append(ConfigError("aws.systemNodeGroup.desiredSize", problem))
    return errors + check_region(aws, facts.aws.regions)


@functools.cache
def ec2_instance_types() -> frozenset[str]:
    """Every EC2 instance type the pinned botocore's EC2 API model names (its `InstanceType` enum)."""
    return frozenset(botocore.session.get_session().get_service_model("ec2").shape_for("InstanceType").enum)


def check_system_instance_types(instance_types: list[str], facts: Facts) -> list[ConfigError]:
    """Each type exists (EC2's own list, from botocore) and one node group holds one architecture: EKS
    launches a node group with one AMI, x86_64 or arm64."""
    errors = []
    known, graviton = ec2_instance_types(), load_name_limits().gravitonFamilies
    arches: dict[str, int] = {}
    for index, name in enumerate(instance_types):
        key = f"aws.systemNodeGroup.instanceTypes[{index}]"
        if name not in known:
            problem = f"{bounded(name)} is not an EC2 instance type (botocore {botocore.__version__}'s EC2 model)"
            errors.append(ConfigError(key, problem))
            continue
        gpu = facts.aws.instance_types.get(name)
        arch = gpu.arch if gpu is not None else ("arm64" if graviton.arm64(name) else "x86_64")
        first = arches.setdefault(arch, index)
        if len(arches) > 1 and first == index:
            other = next(a for a in arches if a != arch)
            problem = f"{name} is {arch} but instanceTypes[{arches[other]}] is {other}: one node group runs one AMI"
            errors.append(ConfigError(key, problem, f"{other} types only"))
    return errors


def _repeated(path: str, values: list[str], what: str, suffix: str = "") -> list[ConfigError]:
    """A value listed twice, named at its second index."""
    return [
        ConfigError(f"{path}[{index}]{suffix}", f"the same {what} as [{values.index(value)}]: {bounded(value)}")
        for index, value in enumerate(values)
        if value in values[:index]
    ]


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
            problem = f"{cidr} opens the API endpoint to the internet"
            errors.append(ConfigError(f"{key}[{index}]", problem, "specific CIDRs, or [] for a private endpoint"))
        elif special is not None:
            why = f"{cidr} is inside {special}, which no caller of a public endpoint comes from "
            why += f"({limits.nonPublicSource})"
            allowed = "public ranges; private networks reach the cluster through its private endpoint"
            errors.append(ConfigError(f"{key}[{index}]", why, allowed))
    networks = [ipaddress.IPv4Network(cidr, strict=False) for cidr in cidrs]  # config `Cidr`: IPv4
    if all(n.prefixlen for n in networks) and any(w.prefixlen == 0 for w in ipaddress.collapse_addresses(networks)):
        problem = bounded(f"{', '.join(cidrs)} together open the API endpoint to the internet", 200, quote=False)
        errors.append(ConfigError(key, problem, "specific CIDRs, or [] for a private endpoint"))
    return errors


def subnet_cidrs(cidr: str, zones: int) -> tuple[list[str], list[str]]:
    """Private subnets take a quarter of the VPC each (pods get VPC addresses); public subnets share the
    last quarter in 1/64ths (they hold only NAT gateways and load balancers)."""
    quarters = list(ipaddress.IPv4Network(cidr).subnets(prefixlen_diff=2))
    public = list(quarters[3].subnets(prefixlen_diff=4))
    return [str(q) for q in quarters[:zones]], [str(p) for p in public[:zones]]


def local_zone_cidrs(cidr: str, count: int) -> list[str]:
    """Local Zone subnets take the upper half of the public quarter's 1/64ths (a /22 of a /16: 1000
    addresses, a UltraServer's 18 nodes with their pods), so they never overlap the AZ subnets."""
    if count > MAX_LOCAL_ZONE_SUBNETS:
        raise ValueError(f"{count} Local Zone subnets, at most {MAX_LOCAL_ZONE_SUBNETS} fit the VPC layout")
    slots = list(ipaddress.IPv4Network(cidr).subnets(prefixlen_diff=2))[3].subnets(prefixlen_diff=4)
    return [str(slot) for slot in list(slots)[16 - MAX_LOCAL_ZONE_SUBNETS :][:count]]


VPC_KEY = "aws.cluster.create.vpcCidr"


def check_subnet_room(aws: Optional[AwsConfig], regions: AwsRegions) -> tuple[list[ConfigError], list[str]]:
    """Each subnet derived from `aws.cluster.create.vpcCidr` holds what its nodes can take at the pools' maxSize
    (catalog/name_limits.yaml `podAddresses`: a node's ENIs x addresses per ENI; the system node group counted in
    every zone, as one zone may get all its nodes), AWS's reserved addresses and EKS's interfaces. Errors, and a
    warning per instance type whose limits the facts lack."""
    create = aws.cluster.create if aws and aws.cluster else None
    if aws is None or create is None or not 16 <= ipaddress.ip_network(create.vpcCidr).prefixlen <= 20:
        return [], []
    facts, unchecked = load_name_limits().podAddresses, []

    def take(nodes: int, instance_type: Optional[str], who: str) -> tuple[int, str]:
        per_node = facts.per_node(instance_type or "")
        if per_node is None:
            why = facts.unlisted.get(instance_type or "", "not in catalog/name_limits.yaml podAddresses")
            unchecked.append(f"{who}: subnet addresses of {instance_type} not checked ({why})")
        return nodes * (per_node or 0), f"{who} {nodes} x {instance_type} x {per_node or '?'}"

    system = aws.systemNodeGroup
    system_take = max(
        (
            take(system.maxSize, t, f"aws.systemNodeGroup.instanceTypes[{i}]")
            for i, t in enumerate(system.instanceTypes)
        ),
        key=lambda taken: taken[0],
    )
    reserved = (facts.subnetReserved, f"{facts.subnetReserved} AWS-reserved")
    eks = (facts.eksInterfaces, f"{facts.eksInterfaces} EKS")
    private = ipaddress.ip_network(subnet_cidrs(create.vpcCidr, len(create.availabilityZones))[0][0])
    subnets = {z: (private, [reserved, eks, system_take]) for z in create.availabilityZones}
    local_zone_subnet = ipaddress.ip_network(local_zone_cidrs(create.vpcCidr, 1)[0])
    for index, pool in enumerate(aws.nodePools):
        if not pool.managed or pool.availabilityZone is None or pool.subnetId is not None:
            continue
        taken = take(pool.maxSize, pool.instanceType, f"aws.nodePools[{index}]")
        if regions.local_zone(aws.region, pool.availabilityZone):
            subnets[f"aws.nodePools[{index}]"] = (local_zone_subnet, [reserved, taken])
        elif pool.availabilityZone in subnets:
            subnets[pool.availabilityZone][1].append(taken)
    errors, vpc_prefix = [], ipaddress.ip_network(create.vpcCidr).prefixlen
    for zone, (network, takes) in subnets.items():
        need = sum(addresses for addresses, _ in takes)
        if need > network.num_addresses:
            wider = 32 - math.ceil(math.log2(need)) - (network.prefixlen - vpc_prefix)
            problem = (
                f"{zone}'s subnet /{network.prefixlen} holds {network.num_addresses} addresses; its nodes at maxSize "
                f"can take {need} on the VPC CNI ({', '.join(shown for _, shown in takes)}; catalog/name_limits.yaml "
                "podAddresses)"
            )
            allowed = f"a /{wider} VPC or wider, or smaller maxSize" if wider >= 16 else "smaller maxSize"
            errors.append(ConfigError(VPC_KEY, bounded(problem, 600, quote=False), allowed))
    return errors, unchecked


def check_cluster_version(
    cluster: Optional[AwsClusterConfig], calendar: EksVersionsFile, today: datetime.date
) -> tuple[list[ConfigError], list[str]]:
    """Errors for a created cluster's version that EKS does not take with STANDARD today; warnings for one
    that leaves standard support within `warnDays` (and for an existing cluster past it)."""
    key, version = stated_version(cluster)
    if cluster is None or version is None:
        return [], []
    dates = calendar.versions.get(version)
    if dates is None:
        problem = f"no EKS support dates for Kubernetes {version} in catalog/eks_versions.yaml"
        return [ConfigError(key, problem, ", ".join(calendar.versions))], []
    if today < dates.released:
        return [ConfigError(key, f"EKS releases Kubernetes {version} on {dates.released}, after today ({today})")], []
    newest = calendar.newest_in_standard_support(today) or (
        f"none in catalog/eks_versions.yaml on {today.isoformat()}: add the calendar's next rows"
    )
    if cluster.create is None:
        if today >= dates.endOfExtendedSupport:
            problem = (
                f"Kubernetes {version} left EKS extended support on {dates.endOfExtendedSupport}, when EKS upgrades "
                "the cluster itself: it no longer runs this version"
            )
            return [ConfigError(key, problem, newest)], []
        if today < dates.endOfStandardSupport:
            return [], []
        return [], [
            f"{key}: Kubernetes {version} left EKS standard support on {dates.endOfStandardSupport} "
            f"(extended support, charged, ends {dates.endOfExtendedSupport}); upgrade to {newest}"
        ]
    if today >= dates.endOfStandardSupport:
        problem = (
            f"Kubernetes {version} left EKS standard support on {dates.endOfStandardSupport} (today is {today}) "
            "and the cluster's upgradePolicy is STANDARD, which EKS sets only in standard support"
        )
        return [ConfigError(VERSION_KEY, problem, newest)], []
    left = (dates.endOfStandardSupport - today).days
    if left > calendar.warnDays:
        return [], []
    return [], [
        f"{VERSION_KEY}: Kubernetes {version} leaves EKS standard support on {dates.endOfStandardSupport} ({left} "
        f"days); after that the stack refuses it: upgrade to {newest}"
    ]
