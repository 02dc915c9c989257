"""GPU node pools, resolved once: config + instance facts -> `ResolvedPool` (what placement needs) and,
for pools the stack creates, `ManagedPoolSpec` (what the node group needs, every field required).

`resolve_pools` also returns every problem of the `aws` cluster and pool blocks, each with its key path.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Optional

from serving_stack.config.aws import AwsConfig, NodePoolConfig
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError
from serving_stack.facts import Facts
from serving_stack.facts.instance_types import (
    AwsCatalog,
    InstanceType,
    NetworkInterface,
)
from serving_stack.names import EFA_PER_GPU_LABEL, FABRIC_LABEL, GPU_LABEL, POOL_LABEL
from serving_stack.plan.quantities import version_tuple

CAPACITY_TYPES = MappingProxyType({"on-demand": "ON_DEMAND", "spot": "SPOT", "capacity-block": "CAPACITY_BLOCK"})


@dataclass(frozen=True)
class ResolvedPool:
    """One pool with every fact placement and costs need, defaults applied."""

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
    subnet_id: Optional[str] = None
    capacity_reservation_id: Optional[str] = None
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
    None: the created network's subnet of the AZ). `efa` and `placement_group` are the switches the
    component follows: EFA interfaces and their self-referencing security group, a `cluster` placement
    group (not for Capacity Blocks, which AWS already co-locates and binds to their reservation)."""

    name: str
    instance_type: str
    ami_type: str
    availability_zone: str
    subnet_id: Optional[str]
    eks_capacity_type: str
    capacity_reservation_id: Optional[str]
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
        return cls(
            name=pool.name, instance_type=pool.instance_type, ami_type=pool.ami_type,
            availability_zone=pool.availability_zone, subnet_id=pool.subnet_id, eks_capacity_type=CAPACITY_TYPES[pool.capacity_type],
            capacity_reservation_id=pool.capacity_reservation_id, min_size=pool.min_size,
            desired_size=pool.desired_size, max_size=pool.max_size, root_volume_gib=pool.root_volume_gib,
            nvme_raid0=pool.nvme_disks > 0, efa=efa, efa_layout=pool.efa_layout if efa else (),
            placement_group=efa and pool.capacity_type != "capacity-block",
            labels=MappingProxyType(pool.node_labels),
        )


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


def check_cluster(config: StackConfig, aws: AwsConfig, facts: Facts) -> list[ConfigError]:
    errors: list[ConfigError] = []
    source = config.kubernetes.cluster.source
    create = aws.cluster.create if aws.cluster else None
    if source == "eks" and create is None:
        errors.append(ConfigError("aws.cluster.create", "required when kubernetes.cluster.source is eks"))
    if create and source != "eks":
        errors.append(ConfigError("kubernetes.cluster.source", "must be eks when aws.cluster.create is set", "eks"))
    if create:
        for index, cidr in enumerate(create.endpointPublicAccessCidrs):
            if ipaddress.ip_network(cidr, strict=False).prefixlen == 0:
                errors.append(ConfigError(f"aws.cluster.create.endpointPublicAccessCidrs[{index}]",
                                          f"{cidr} opens the API endpoint to the internet",
                                          "specific CIDRs, or [] for a private endpoint"))
        if not 16 <= ipaddress.ip_network(create.vpcCidr, strict=False).prefixlen <= 20:
            errors.append(ConfigError("aws.cluster.create.vpcCidr", f"{create.vpcCidr} is not a /16../20 network"))
        minimum = facts.platform.chart.minKubernetes
        if version_tuple(create.kubernetesVersion) < version_tuple(minimum):
            errors.append(ConfigError("aws.cluster.create.kubernetesVersion",
                                      f"the Dynamo platform needs Kubernetes >= {minimum}, got {create.kubernetesVersion}"))
    system = aws.systemNodeGroup
    if not system.minSize <= system.desiredSize <= system.maxSize:
        errors.append(ConfigError("aws.systemNodeGroup.desiredSize", f"{system.desiredSize} is not between minSize "
                                  f"{system.minSize} and maxSize {system.maxSize}"))
    return errors


def _check_pool(path: str, pool: NodePoolConfig, aws: AwsConfig, aws_catalog: AwsCatalog) -> list[ConfigError]:
    errors: list[ConfigError] = []
    create = aws.cluster.create if aws.cluster else None
    existing = aws.cluster.existing if aws.cluster else None
    if pool.instanceType is not None and pool.instanceType not in aws_catalog.instance_types:
        return [ConfigError(f"{path}.instanceType", f"unknown instance type {pool.instanceType!r}",
                            ", ".join(aws_catalog.instance_types))]
    if (pool.instanceType is None) == (pool.nodeFacts is None) or (pool.managed and pool.nodeFacts):
        allowed = "instanceType" if pool.managed else "instanceType or nodeFacts"
        return [ConfigError(f"{path}.instanceType", "a pool names its nodes by exactly one of instanceType, nodeFacts",
                            allowed)]
    facts = pool_facts(pool, aws_catalog)
    if facts is None:
        gpu = pool.nodeFacts.gpu if pool.nodeFacts else None
        return [ConfigError(f"{path}.nodeFacts.gpu", f"unknown GPU {gpu!r}", ", ".join(aws_catalog.gpus))]
    if not pool.minSize <= pool.desiredSize <= pool.maxSize:
        errors.append(ConfigError(f"{path}.desiredSize", f"{pool.desiredSize} is not between minSize {pool.minSize} "
                                  f"and maxSize {pool.maxSize}"))
    labels = aws_catalog.gpus[facts.gpu].product_labels
    if pool.gpuProduct and pool.gpuProduct not in labels:
        errors.append(ConfigError(f"{path}.gpuProduct", f"{pool.gpuProduct!r} is not a product label of {facts.gpu}",
                                  ", ".join(labels)))
    fabric = pool_fabric(pool, facts)
    if fabric == "efa" and not facts.efa_interfaces:
        errors.append(ConfigError(f"{path}.fabric", f"{pool.instanceType or 'these nodes'} has no EFA interfaces",
                                  "ib, none" if not pool.managed else "none"))
    if fabric == "ib" and pool.managed:
        errors.append(ConfigError(f"{path}.fabric", "EC2 instances have no InfiniBand; ib is for managed: false pools",
                                  "efa, none"))
    if (pool.capacityType == "capacity-block") != (pool.capacityReservationId is not None):
        key = "capacityReservationId" if pool.capacityType == "capacity-block" else "capacityType"
        errors.append(ConfigError(f"{path}.{key}",
                                  "capacityReservationId goes with capacityType capacity-block, and only with it"))
    if facts.instance and facts.instance.capacityBlocksOnly and pool.capacityType != "capacity-block":
        errors.append(ConfigError(f"{path}.capacityType", f"{pool.instanceType} is available through Capacity Blocks "
                                  "only", "capacity-block"))
    version = create.kubernetesVersion if create else existing.kubernetesVersion if existing else None
    minimum = facts.instance.minKubernetes if facts.instance else None
    if minimum and version and version_tuple(version) < version_tuple(minimum):
        errors.append(ConfigError(f"{path}.instanceType", f"{pool.instanceType} needs Kubernetes >= {minimum}, "
                                  f"the cluster runs {version}"))
    if not pool.managed:
        return errors
    if aws.cluster is None:
        errors.append(ConfigError(f"{path}.managed", "a managed pool needs aws.cluster (create or existing)", "false"))
    elif pool.availabilityZone is None:
        errors.append(ConfigError(f"{path}.availabilityZone",
                                  "required for a managed pool (one AZ: cluster placement group)"))
    elif create and pool.availabilityZone not in create.availabilityZones:
        errors.append(ConfigError(f"{path}.availabilityZone", f"{pool.availabilityZone!r} is not a cluster AZ",
                                  ", ".join(create.availabilityZones)))
    elif existing and pool.subnetId is None and pool.availabilityZone not in existing.privateSubnetIds:
        errors.append(ConfigError(f"{path}.subnetId", f"no subnet for {pool.availabilityZone} in "
                                  "aws.cluster.existing.privateSubnetIds", "set subnetId"))
    return errors


def check_pools(aws: AwsConfig, aws_catalog: AwsCatalog) -> list[ConfigError]:
    errors: list[ConfigError] = []
    seen: set[str] = set()
    for index, pool in enumerate(aws.nodePools):
        if pool.name in seen:
            errors.append(ConfigError(f"aws.nodePools[{index}].name", f"duplicate pool name {pool.name!r}"))
        seen.add(pool.name)
        errors += _check_pool(f"aws.nodePools[{index}]", pool, aws, aws_catalog)
    return errors


def _resolve(pool: NodePoolConfig, aws: AwsConfig, aws_catalog: AwsCatalog) -> ResolvedPool:
    facts = pool_facts(pool, aws_catalog)
    if facts is None:
        raise ValueError(f"pool {pool.name!r} was not checked (run check_pools first)")
    instance, fabric = facts.instance, pool_fabric(pool, facts)
    existing = aws.cluster.existing if aws.cluster else None
    subnet = pool.subnetId or (existing.privateSubnetIds.get(pool.availabilityZone or "") if existing else None)
    return ResolvedPool(
        name=pool.name, managed=pool.managed, gpu=facts.gpu,
        gpu_product=pool.gpuProduct or aws_catalog.gpus[facts.gpu].productLabel,
        gpus_per_node=facts.gpus_per_node, arch=facts.arch, fabric=fabric, efa_interfaces=facts.efa_interfaces,
        min_size=pool.minSize, desired_size=pool.desiredSize, max_size=pool.maxSize, capacity_type=pool.capacityType,
        instance_type=pool.instanceType, ami_type=instance.amiType if instance else None,
        availability_zone=pool.availabilityZone, subnet_id=subnet, capacity_reservation_id=pool.capacityReservationId,
        nvme_disks=instance.nvmeDisks if instance else 0, root_volume_gib=pool.rootVolumeGiB,
        on_demand_usd_per_hour=instance.onDemandUsdPerHour if instance else None,
        efa_layout=tuple(instance.efa_layout()) if instance and fabric == "efa" else (),
    )


def resolve_pools(config: StackConfig, facts: Facts) -> dict[str, ResolvedPool]:
    """Pool name -> resolved pool (the config must have passed `check_pools`)."""
    if config.aws is None:
        return {}
    return {pool.name: _resolve(pool, config.aws, facts.aws) for pool in config.aws.nodePools}
