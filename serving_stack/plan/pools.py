"""GPU node pools, resolved once: config + instance facts -> `ResolvedPool` (what placement needs) and,
for pools the stack creates, `ManagedPoolSpec` (what the node group needs, every field required).

The checks of the `aws` cluster and pool blocks live in `serving_stack.plan.cluster_checks` and
`serving_stack.plan.pool_checks`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional

from serving_stack.config.aws import AwsConfig, NodePoolConfig
from serving_stack.config.stack import StackConfig
from serving_stack.facts import Facts
from serving_stack.facts.instance_types import (
    AwsCatalog,
    InstanceType,
    NetworkInterface,
)
from serving_stack.names import EFA_PER_GPU_LABEL, FABRIC_LABEL, GPU_LABEL, POOL_LABEL

EKS_CAPACITY_TYPES = MappingProxyType(
    {
        "on-demand": "ON_DEMAND",
        "spot": "SPOT",
        "odcr": "ON_DEMAND",
        "capacity-block": "CAPACITY_BLOCK",
    }
)
RESERVED_CAPACITY_TYPES = ("odcr", "capacity-block")
# Local Zone subnets the created VPC has room for (components.network.local_zone_cidrs).
MAX_LOCAL_ZONE_SUBNETS = 8


@dataclass(frozen=True)
class ResolvedPool:
    """One pool with every fact placement and costs need, defaults applied. `kubernetes_version`: the
    version its node group runs (the cluster's), None when the stack does not know the cluster's."""

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
    on_demand_usd_per_hour: Optional[float] = None
    efa_layout: tuple[NetworkInterface, ...] = ()

    @property
    def efa_per_gpu(self) -> int:
        return self.efa_interfaces // self.gpus_per_node if self.fabric == "efa" else 0

    @property
    def node_labels(self) -> dict[str, str]:
        """The label contract of pool nodes (placement and the policy pack select on it)."""
        labels = {POOL_LABEL: self.name, FABRIC_LABEL: self.fabric, GPU_LABEL: self.gpu}
        if self.fabric == "efa":
            labels[EFA_PER_GPU_LABEL] = str(self.efa_per_gpu)
        return labels


@dataclass(frozen=True)
class ManagedPoolSpec:
    """An EKS managed node group of GPU instances (`subnet_id`: a configured or existing-cluster subnet;
    None: the created network's subnet of the zone, for a Local Zone pool its own). The switches the
    component follows:

    - `efa`: EFA interfaces (`efa_layout`) and their self-referencing security group;
    - `placement_group`: a `cluster` placement group (not for reservations: a Capacity Block is already
      co-located, and an ODCR launches where it was reserved);
    - `instance_type_on_launch_template`: the instance type goes on the launch template and the node group
      names none (what EKS requires of a Capacity Block group; the other way round for the rest);
    - `market_type`: the launch template's market (`capacity-block`), None for On-Demand and Spot;
    - `capacity_reservation_id`: the reservation the launch template targets (Capacity Block or ODCR).
    """

    name: str
    instance_type: str
    ami_type: str
    availability_zone: str
    local_zone: bool
    subnet_id: Optional[str]
    eks_capacity_type: str
    market_type: Optional[str]
    instance_type_on_launch_template: bool
    capacity_reservation_id: Optional[str]
    kubernetes_version: Optional[str]
    min_size: int
    desired_size: int
    max_size: int
    root_volume_gib: int
    nvme_raid0: bool
    efa: bool
    efa_layout: tuple[NetworkInterface, ...]
    placement_group: bool
    labels: Mapping[str, str]

    @property
    def reserved_capacity(self) -> bool:
        """Nodes come from a reservation (Capacity Block or ODCR), which has no room for a second group."""
        return self.capacity_reservation_id is not None

    @classmethod
    def of(cls, pool: ResolvedPool) -> ManagedPoolSpec:
        if not (pool.managed and pool.instance_type and pool.ami_type and pool.availability_zone):
            raise ValueError(f"pool {pool.name!r} is not a managed pool with an instance type and an AZ")
        efa = pool.fabric == "efa"
        capacity_block = pool.capacity_type == "capacity-block"
        return cls(
            name=pool.name,
            instance_type=pool.instance_type,
            ami_type=pool.ami_type,
            availability_zone=pool.availability_zone,
            local_zone=pool.local_zone,
            subnet_id=pool.subnet_id,
            eks_capacity_type=EKS_CAPACITY_TYPES[pool.capacity_type],
            market_type="capacity-block" if capacity_block else None,
            instance_type_on_launch_template=capacity_block,
            capacity_reservation_id=pool.capacity_reservation_id,
            kubernetes_version=pool.kubernetes_version,
            min_size=pool.min_size,
            desired_size=pool.desired_size,
            max_size=pool.max_size,
            root_volume_gib=pool.root_volume_gib,
            nvme_raid0=pool.nvme_disks > 0,
            efa=efa,
            efa_layout=pool.efa_layout if efa else (),
            placement_group=efa and pool.capacity_type not in RESERVED_CAPACITY_TYPES,
            labels=MappingProxyType(pool.node_labels),
        )


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


def cluster_version(aws: AwsConfig) -> Optional[str]:
    """The Kubernetes version the config says the cluster runs (None: an existing cluster that does not say)."""
    create = aws.cluster.create if aws.cluster else None
    existing = aws.cluster.existing if aws.cluster else None
    return create.kubernetesVersion if create else existing.kubernetesVersion if existing else None


def _resolve(pool: NodePoolConfig, aws: AwsConfig, aws_catalog: AwsCatalog) -> ResolvedPool:
    facts = pool_facts(pool, aws_catalog)
    if facts is None:
        raise ValueError(f"pool {pool.name!r} was not checked (run check_pools first)")
    instance, fabric = facts.instance, pool_fabric(pool, facts)
    existing = aws.cluster.existing if aws.cluster else None
    subnet = pool.subnetId or (existing.privateSubnetIds.get(pool.availabilityZone or "") if existing else None)
    zone = pool.availabilityZone
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
        kubernetes_version=cluster_version(aws),
        compute_domains=bool(instance and instance.computeDomains),
        nvme_disks=instance.nvmeDisks if instance else 0,
        root_volume_gib=pool.rootVolumeGiB,
        on_demand_usd_per_hour=instance.onDemandUsdPerHour if instance else None,
        efa_layout=tuple(instance.efa_layout()) if instance and fabric == "efa" else (),
    )


def resolve_pools(config: StackConfig, facts: Facts) -> dict[str, ResolvedPool]:
    """Pool name -> resolved pool (the config must have passed `check_pools`)."""
    if config.aws is None:
        return {}
    return {pool.name: _resolve(pool, config.aws, facts.aws) for pool in config.aws.nodePools}


def local_zone_subnets(pools: Iterable[ResolvedPool]) -> tuple[LocalZoneSubnet, ...]:
    """One subnet per managed Local Zone pool without a configured subnet, in config order (the order
    gives each its CIDR: add Local Zone pools at the end)."""
    return tuple(
        LocalZoneSubnet(p.name, p.availability_zone)
        for p in pools
        if p.managed and p.local_zone and p.availability_zone and p.subnet_id is None
    )
