"""GPU node pools, resolved once: config + instance facts -> `ResolvedPool` (what placement, costs and a node group
need); the pools' checks against the facts and the rules AWS documents (regions and zones from
`catalog/aws_regions.yaml`: the control plane never gets a Local Zone subnet; reservation ids; Kubernetes >= 1.33
for GB200; a Capacity Block group upgraded only at size 0); and their cost rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional

from serving_stack.config.aws import AwsClusterConfig, AwsConfig, NodePoolConfig
from serving_stack.contract.outputs import NodePool
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.aws import (
    AwsCatalog,
    AwsRegions,
    InstanceType,
    NetworkInterface,
    version_key,
)
from serving_stack.names import EFA_PER_GPU_LABEL, FABRIC_LABEL, GPU_LABEL, POOL_LABEL

EKS_CAPACITY_TYPES = MappingProxyType(
    {"on-demand": "ON_DEMAND", "spot": "SPOT", "odcr": "ON_DEMAND", "capacity-block": "CAPACITY_BLOCK"}
)
RESERVED_CAPACITY_TYPES = ("odcr", "capacity-block")
# Local Zone subnets the created VPC has room for (plan.cluster.local_zone_cidrs).
MAX_LOCAL_ZONE_SUBNETS = 8


@dataclass(frozen=True)
class ResolvedPool:
    """One pool with every fact placement, costs and its node group need, defaults applied. `kubernetes_version`:
    the version its node group runs (the cluster's), None when the stack does not know the cluster's;
    `subnet_id` None: the created network's subnet of the zone. A managed pool's node group follows the
    switches below and `fast_image_pull` (nodeadm's SOCI parallel pull, off with `image_cache_snapshot_id`: a
    containerd store from an EBS snapshot)."""

    name: str
    managed: bool
    gpu: str
    gpu_product: str
    gpus_per_node: int
    arch: str
    fabric: str
    efa_interfaces: int
    min_size: int
    desired_size: int
    max_size: int
    capacity_type: str
    instance_type: Optional[str] = None
    ami_type: Optional[str] = None
    availability_zone: Optional[str] = None
    local_zone: bool = False
    subnet_id: Optional[str] = None
    capacity_reservation_id: Optional[str] = None
    kubernetes_version: Optional[str] = None
    compute_domains: bool = False
    nvme_disks: int = 0
    root_volume_gib: int = 200
    fast_image_pull: bool = False
    image_cache_snapshot_id: Optional[str] = None
    on_demand_usd_per_hour: Optional[float] = None
    efa_layout: tuple[NetworkInterface, ...] = ()

    @property
    def efa(self) -> bool:
        """EFA interfaces on the launch template and their self-referencing security group."""
        return self.fabric == "efa"

    @property
    def efa_per_gpu(self) -> int:
        return self.efa_interfaces // self.gpus_per_node if self.efa else 0

    @property
    def node_labels(self) -> dict[str, str]:
        """The label contract of pool nodes (placement and the policy pack select on it)."""
        labels = {POOL_LABEL: self.name, FABRIC_LABEL: self.fabric, GPU_LABEL: self.gpu}
        if self.efa:
            labels[EFA_PER_GPU_LABEL] = str(self.efa_per_gpu)
        return labels

    @property
    def eks_capacity_type(self) -> str:
        return EKS_CAPACITY_TYPES[self.capacity_type]

    @property
    def instance_type_on_launch_template(self) -> bool:
        """What EKS requires of a Capacity Block group (and none on the node group)."""
        return self.capacity_type == "capacity-block"

    @property
    def market_type(self) -> Optional[str]:
        return "capacity-block" if self.instance_type_on_launch_template else None

    @property
    def reserved_capacity(self) -> bool:
        """Nodes come from a reservation (Capacity Block or ODCR), which has no room for a second group."""
        return self.capacity_reservation_id is not None

    @property
    def placement_group(self) -> bool:
        """A `cluster` placement group; not for reservations, already co-located."""
        return self.efa and self.capacity_type not in RESERVED_CAPACITY_TYPES

    @property
    def nvme_raid0(self) -> bool:
        """The instance store as one RAID0 array for containerd and pod logs."""
        return self.nvme_disks > 0


@dataclass(frozen=True)
class LocalZoneSubnet:
    """A subnet the created network makes for one Local Zone pool (never given to the control plane)."""

    pool: str
    zone: str


@dataclass(frozen=True)
class PoolFacts:
    """What one node of a pool holds, from the instance catalog or the pool's `nodeFacts`."""

    gpu: str
    gpus_per_node: int
    arch: str
    efa_interfaces: int
    instance: Optional[InstanceType]


def pool_facts(pool: NodePoolConfig, aws_catalog: AwsCatalog) -> Optional[PoolFacts]:
    if pool.instanceType in aws_catalog.instance_types:
        i = aws_catalog.instance_types[pool.instanceType]
        return PoolFacts(i.gpu, i.gpus, i.arch, i.efaInterfaces, i)
    if pool.instanceType is None and pool.nodeFacts and pool.nodeFacts.gpu in aws_catalog.gpus:
        return PoolFacts(pool.nodeFacts.gpu, pool.nodeFacts.gpus, pool.nodeFacts.arch, 0, None)
    return None


def pool_fabric(pool: NodePoolConfig, facts: PoolFacts) -> str:
    return pool.fabric or ("efa" if facts.efa_interfaces else "none")


VERSION_KEY = "aws.cluster.create.kubernetesVersion"


def stated_version(cluster: Optional[AwsClusterConfig]) -> tuple[str, Optional[str]]:
    """(config key, version) of the cluster's Kubernetes version: a created cluster's, else the version an
    existing cluster states (None when it states none)."""
    if cluster is not None and cluster.create is not None:
        return VERSION_KEY, cluster.create.kubernetesVersion
    existing = cluster.existing if cluster is not None else None
    return "aws.cluster.existing.kubernetesVersion", existing.kubernetesVersion if existing is not None else None


def resolve_pool(pool: NodePoolConfig, aws: AwsConfig, aws_catalog: AwsCatalog) -> ResolvedPool:
    """The pool with its facts and defaults (the config must have passed `check_pools`)."""
    facts = pool_facts(pool, aws_catalog)
    if facts is None:
        raise ValueError(f"pool {pool.name!r} was not checked (run check_pools first)")
    instance, fabric = facts.instance, pool_fabric(pool, facts)
    existing = aws.cluster.existing if aws.cluster else None
    subnet = pool.subnetId or (existing.privateSubnetIds.get(pool.availabilityZone or "") if existing else None)
    zone = pool.availabilityZone
    delivery = aws_catalog.platform.imageDelivery.get(instance.amiType) if instance else None
    return ResolvedPool(
        name=pool.name,
        managed=pool.managed,
        gpu=facts.gpu,
        gpu_product=pool.gpuProduct or aws_catalog.gpus[facts.gpu].productLabel,
        gpus_per_node=facts.gpus_per_node,
        arch=facts.arch,
        fabric=fabric,
        efa_interfaces=facts.efa_interfaces,
        min_size=pool.minSize,
        desired_size=pool.desiredSize,
        max_size=pool.maxSize,
        capacity_type=pool.capacityType,
        instance_type=pool.instanceType,
        ami_type=instance.amiType if instance else None,
        availability_zone=zone,
        local_zone=bool(zone and aws_catalog.regions.local_zone(aws.region, zone)),
        subnet_id=subnet,
        capacity_reservation_id=pool.capacityReservationId,
        kubernetes_version=stated_version(aws.cluster)[1],
        compute_domains=bool(instance and instance.computeDomains),
        nvme_disks=instance.nvmeDisks if instance else 0,
        root_volume_gib=pool.rootVolumeGiB,
        fast_image_pull=bool(delivery and delivery.fastImagePull) and pool.imageCacheSnapshotId is None,
        image_cache_snapshot_id=pool.imageCacheSnapshotId,
        on_demand_usd_per_hour=instance.onDemandUsdPerHour if instance else None,
        efa_layout=tuple(instance.efa_layout()) if instance and fabric == "efa" else (),
    )


ALLOWED_CHARS = 200


def bounded_list(values: Iterable[str], limit: int = ALLOWED_CHARS) -> str:
    """`a, b, c` cut to about `limit` characters, saying how many names were left out."""
    names = list(values)
    shown: list[str] = []
    for index, name in enumerate(names):
        rest = len(names) - index
        if shown and len(", ".join([*shown, name])) + len(f", ... ({rest} more)") > limit:
            return f"{', '.join(shown)}, ... ({rest} more in catalog/aws_regions.yaml)"
        shown.append(name)
    return ", ".join(shown) or "none"


def check_region(aws: AwsConfig, regions: AwsRegions) -> list[ConfigError]:
    """The Region, the AZs of a cluster the stack creates and the subnet zones of an existing cluster."""
    if aws.region not in regions.regions:
        return [ConfigError("aws.region", f"unknown Region {aws.region!r}", bounded_list(regions.regions))]
    errors: list[ConfigError] = []
    zones = regions.availability_zones(aws.region)
    create = aws.cluster.create if aws.cluster else None
    existing = aws.cluster.existing if aws.cluster else None
    for index, zone in enumerate(create.availabilityZones if create else []):
        if zone in zones:
            continue
        problem = (
            f"{zone} is a Local Zone; the EKS control plane gets Availability Zone subnets only"
            if regions.local_zone(aws.region, zone)
            else f"{zone!r} is not an Availability Zone of {aws.region}"
        )
        errors.append(ConfigError(f"aws.cluster.create.availabilityZones[{index}]", problem, bounded_list(zones)))
    known = [*zones, *regions.local_zones(aws.region)]
    subnets = existing.privateSubnetIds if existing else {}
    for zone, subnet in subnets.items():
        key = f"aws.cluster.existing.privateSubnetIds.{zone}"
        if zone not in known:
            errors.append(ConfigError(key, f"not a zone of {aws.region}", bounded_list(known)))
        first = next(z for z, s in subnets.items() if s == subnet)
        if first != zone:  # a subnet lives in one zone (EC2 CreateSubnet)
            errors.append(ConfigError(key, f"{subnet} is also listed under {first}: a subnet is in one zone only"))
    return errors


def check_pool_zone(
    path: str, zone: str, instance: Optional[InstanceType], aws: AwsConfig, regions: AwsRegions
) -> Optional[ConfigError]:
    """A pool's zone is one its instance type launches in: an AZ of the Region, or for a type sold only in
    Local Zones, a Local Zone of one of its groups (which the account must have opted in to)."""
    key = f"{path}.availabilityZone"
    local = regions.local_zone(aws.region, zone)
    if instance is not None and instance.local_zones_only:
        allowed = regions.local_zones(aws.region, instance.localZoneGroups)
        if local is None or local.group not in instance.localZoneGroups:
            groups = ", ".join(instance.localZoneGroups)
            why = f"this instance type launches only in Local Zones of {groups} (opt in to the zone group first)"
            return ConfigError(key, f"{why}, got {zone!r} in {aws.region}", bounded_list(allowed))
        return None
    zones = regions.availability_zones(aws.region)
    if zone in zones:
        return None
    if local is not None and instance is not None:
        why = f"{zone} is a Local Zone; this instance type launches in Availability Zones"
        return ConfigError(key, why, bounded_list(zones))
    if local is None:
        return ConfigError(key, f"{zone!r} is not a zone of {aws.region}", bounded_list(zones))
    return None


def _check_capacity(path: str, pool: NodePoolConfig, facts: PoolFacts) -> list[ConfigError]:
    """The capacity type is one AWS sells the instance type as; reservations name their id, others none."""
    errors, key, instance = [], f"{path}.capacityType", facts.instance
    if instance and pool.capacityType not in instance.capacityTypes:
        sold = ", ".join(instance.capacityTypes)
        errors.append(ConfigError(key, f"{pool.instanceType} is not sold as {pool.capacityType}", sold))
    reserved = pool.capacityType in RESERVED_CAPACITY_TYPES
    if reserved and pool.capacityReservationId is None:
        why = f"required with capacityType {pool.capacityType}: the launch template targets the reservation"
        errors.append(ConfigError(f"{path}.capacityReservationId", why))
    if not reserved and pool.capacityReservationId is not None:
        reservations = ", ".join(RESERVED_CAPACITY_TYPES)
        errors.append(ConfigError(key, "capacityReservationId goes with a reservation", reservations))
    return errors


def _check_version(path: str, pool: NodePoolConfig, facts: PoolFacts, version: Optional[str]) -> list[ConfigError]:
    """The nodes' version (the pool's, else the cluster's) against the instance type's minimum; a Capacity
    Block group whose version moves is at size 0 (EKS upgrades it only then)."""
    errors: list[ConfigError] = []
    nodes = pool.kubernetesVersion or version
    minimum = facts.instance.minKubernetes if facts.instance else None
    if minimum and nodes and version_key(nodes) < version_key(minimum):
        why = f"{pool.instanceType} needs Kubernetes >= {minimum}, the cluster runs {nodes}"
        errors.append(ConfigError(f"{path}.instanceType", why))
    if version is None or not pool.managed:
        return errors
    key = f"{path}.kubernetesVersion"
    if pool.kubernetesVersion and version_key(pool.kubernetesVersion) > version_key(version):
        return [*errors, ConfigError(key, f"{pool.kubernetesVersion} is newer than the cluster's {version}")]
    if pool.capacityType != "capacity-block":
        return errors
    if pool.kubernetesVersion is None:
        why = f"required for capacity-block pool {pool.name!r}: the version its nodes run, so that an upgrade is seen"
        errors.append(ConfigError(key, why + " before it reaches EKS", version))
    elif pool.kubernetesVersion != version and (pool.minSize or pool.desiredSize):
        why = (
            f"capacity-block pool {pool.name!r} moves from Kubernetes {pool.kubernetesVersion} to {version}; EKS "
            "upgrades a Capacity Block group only at size 0: set minSize and desiredSize to 0 for this up, then "
            f"kubernetesVersion {version!r} and the sizes back"
        )
        errors.append(ConfigError(f"{path}.desiredSize", why, "0"))
    return errors


def _check_placement(
    path: str, pool: NodePoolConfig, facts: PoolFacts, aws: AwsConfig, aws_catalog: AwsCatalog
) -> list[ConfigError]:
    """A managed pool lives in one zone: an AZ of the created cluster, or a Local Zone with its own subnet."""
    create = aws.cluster.create if aws.cluster else None
    existing = aws.cluster.existing if aws.cluster else None
    zone = pool.availabilityZone
    if aws.cluster is None:
        return [ConfigError(f"{path}.managed", "a managed pool needs aws.cluster (create or existing)", "false")]
    if zone is None:
        why = "required for a managed pool (one zone: the reservation's, the placement group's)"
        return [ConfigError(f"{path}.availabilityZone", why)]
    zone_error = check_pool_zone(path, zone, facts.instance, aws, aws_catalog.regions)
    if zone_error:
        return [zone_error]
    local = aws_catalog.regions.local_zone(aws.region, zone) is not None
    subnet_key = f"{path}.subnetId"
    if create and pool.subnetId is not None:
        # EKS puts a node group only in subnets of the cluster's VPC, and the VPC this stack creates has no
        # id before `up`: a configured subnet is necessarily another VPC's (CreateNodegroup refuses it).
        why = "aws.cluster.create builds the VPC, so a subnet id cannot name one of its subnets"
        return [ConfigError(subnet_key, why, "remove subnetId (the stack makes a Local Zone pool's subnet itself)")]
    if create and not local and zone not in create.availabilityZones:
        cluster_zones = ", ".join(create.availabilityZones)
        return [ConfigError(f"{path}.availabilityZone", f"{zone!r} is not a cluster AZ", cluster_zones)]
    listed = [z for z, subnet in existing.privateSubnetIds.items() if subnet == pool.subnetId] if existing else []
    if listed and zone not in listed:
        why = f"{pool.subnetId} is the subnet of {listed[0]} (aws.cluster.existing.privateSubnetIds); the pool is "
        why += f"in {zone}" + (", a Local Zone: it needs a subnet of that Local Zone" if local else "")
        return [ConfigError(subnet_key, why, f"a subnet of {zone}")]
    if existing and pool.subnetId is None and zone not in existing.privateSubnetIds:
        why = f"no subnet for {zone} in aws.cluster.existing.privateSubnetIds"
        return [ConfigError(subnet_key, why, "set subnetId")]
    return []


def _check_pool(path: str, pool: NodePoolConfig, aws: AwsConfig, aws_catalog: AwsCatalog) -> list[ConfigError]:
    errors: list[ConfigError] = []
    if pool.instanceType is not None and pool.instanceType not in aws_catalog.instance_types:
        known = ", ".join(aws_catalog.instance_types)
        return [ConfigError(f"{path}.instanceType", f"unknown instance type {bounded(pool.instanceType)}", known)]
    if (pool.instanceType is None) == (pool.nodeFacts is None) or (pool.managed and pool.nodeFacts):
        allowed = "instanceType" if pool.managed else "instanceType or nodeFacts"
        why = "a pool names its nodes by exactly one of instanceType, nodeFacts"
        return [ConfigError(f"{path}.instanceType", why, allowed)]
    facts = pool_facts(pool, aws_catalog)
    if facts is None:
        gpu = pool.nodeFacts.gpu if pool.nodeFacts else None
        return [ConfigError(f"{path}.nodeFacts.gpu", f"unknown GPU {bounded(gpu)}", ", ".join(aws_catalog.gpus))]
    if pool.imageCacheSnapshotId is not None and not pool.managed:
        why = "only a pool the stack manages has a launch template to mount the snapshot"
        errors.append(ConfigError(f"{path}.imageCacheSnapshotId", why, "remove it, or managed: true"))
    if not pool.minSize <= pool.desiredSize <= pool.maxSize:
        why = f"{pool.desiredSize} is not between minSize {pool.minSize} and maxSize {pool.maxSize}"
        errors.append(ConfigError(f"{path}.desiredSize", why))
    labels = aws_catalog.gpus[facts.gpu].product_labels
    if pool.gpuProduct and pool.gpuProduct not in labels:
        why = f"{bounded(pool.gpuProduct)} is not a product label of {facts.gpu}"
        errors.append(ConfigError(f"{path}.gpuProduct", why, ", ".join(labels)))
    fabric = pool_fabric(pool, facts)
    if fabric == "efa" and not facts.efa_interfaces:
        why = f"{pool.instanceType or 'these nodes'} has no EFA interfaces"
        errors.append(ConfigError(f"{path}.fabric", why, "ib, none" if not pool.managed else "none"))
    if fabric == "ib" and pool.managed:
        why = "EC2 instances have no InfiniBand; ib is for managed: false pools"
        errors.append(ConfigError(f"{path}.fabric", why, "efa, none"))
    errors += _check_capacity(path, pool, facts)
    errors += _check_version(path, pool, facts, stated_version(aws.cluster)[1])
    if pool.managed:
        errors += _check_placement(path, pool, facts, aws, aws_catalog)
    return errors


def check_pools(aws: AwsConfig, aws_catalog: AwsCatalog) -> list[ConfigError]:
    errors: list[ConfigError] = []
    seen: set[str] = set()
    for index, pool in enumerate(aws.nodePools):
        if pool.name in seen:
            errors.append(ConfigError(f"aws.nodePools[{index}].name", f"duplicate pool name {pool.name!r}"))
        seen.add(pool.name)
        errors += _check_pool(f"aws.nodePools[{index}]", pool, aws, aws_catalog)
    local = [
        index
        for index, pool in enumerate(aws.nodePools)
        if pool.managed
        and pool.subnetId is None
        and pool.availabilityZone
        and aws_catalog.regions.local_zone(aws.region, pool.availabilityZone)
    ]
    if aws.cluster and aws.cluster.create and len(local) > MAX_LOCAL_ZONE_SUBNETS:
        key = f"aws.nodePools[{local[MAX_LOCAL_ZONE_SUBNETS]}].availabilityZone"
        why = f"the created VPC has room for {MAX_LOCAL_ZONE_SUBNETS} Local Zone pool subnets"
        errors.append(ConfigError(key, why, "fewer Local Zone pools"))
    return errors


def _usd(price: Optional[float], nodes: int) -> Optional[float]:
    return round(price * nodes, 2) if price is not None else None


def pool_cost_rows(pools: Iterable[ResolvedPool]) -> list[NodePool]:
    """One row per pool for the outputs: its sizes and its hourly cost at desired, min and max nodes."""
    return [
        NodePool(
            pool=pool.name,
            instanceType=pool.instance_type,
            capacityType=pool.capacity_type,
            gpusPerNode=pool.gpus_per_node,
            minSize=pool.min_size,
            desiredSize=pool.desired_size,
            maxSize=pool.max_size,
            usdPerHour=_usd(pool.on_demand_usd_per_hour, pool.desired_size),
            usdPerHourMin=_usd(pool.on_demand_usd_per_hour, pool.min_size),
            usdPerHourMax=_usd(pool.on_demand_usd_per_hour, pool.max_size),
        )
        for pool in pools
    ]
