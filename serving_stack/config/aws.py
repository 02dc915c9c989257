"""Config blocks for the AWS side of the stack (network, EKS cluster, GPU node pools, model-cache storage)
and `check_aws`, the cross-field checks that run before any resource is registered.

Under `aws.cluster`, `create` makes the stack build the VPC and the EKS cluster (then
`kubernetes.cluster.source` must be `eks`); `existing` names a cluster and its private subnets so that
the stack can add managed GPU node groups to it. Pools with `managed: false` only describe nodes that
already exist (placement facts): they must carry the node labels of `serving_stack.plan.pools.node_labels`.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal, Optional

import pydantic

from serving_stack.facts.catalog import Catalog, Recipe, load_platform
from serving_stack.config.serving import Block, DnsLabel, matching
from serving_stack.errors import ConfigError
from serving_stack.facts.instance_types import AwsCatalog, InstanceType, load_aws_catalog

if TYPE_CHECKING:
    from serving_stack.config.stack import StackConfig

KubernetesVersion = matching(r"^1\.\d+$", "a Kubernetes minor version such as 1.33")
AvailabilityZone = matching(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$", "an availability zone name such as us-east-1a")
Region = matching(r"^[a-z]{2}(-[a-z]+)+-\d$", "a region name such as us-east-1")
SubnetId = matching(r"^subnet-[0-9a-f]{8,17}$", "a subnet id such as subnet-0123456789abcdef0")
SecurityGroupId = matching(r"^sg-[0-9a-f]{8,17}$", "a security group id such as sg-0123456789abcdef0")
VpcId = matching(r"^vpc-[0-9a-f]{8,17}$", "a VPC id such as vpc-0123456789abcdef0")
ReservationId = matching(r"^cr-[0-9a-f]{8,17}$", "a capacity reservation id such as cr-0123456789abcdef0")
Cidr = matching(r"^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$", "an IPv4 CIDR such as 203.0.113.0/24")
Fabric = Literal["efa", "ib", "none"]
FSX_FIRST_STEP_GIB, FSX_STEP_GIB = 1200, 2400


class CreateCluster(Block):
    name: DnsLabel
    kubernetesVersion: KubernetesVersion
    availabilityZones: list[AvailabilityZone] = pydantic.Field(min_length=2, max_length=3)
    vpcCidr: Cidr = "10.0.0.0/16"
    endpointPublicAccessCidrs: list[Cidr] = pydantic.Field(default_factory=list, description="[]: private endpoint only")
    controlPlaneLogRetentionDays: Literal[7, 14, 30, 60, 90, 180, 365] = 90
    natGatewayPerAz: bool = True


class ExistingCluster(Block):
    name: str = pydantic.Field(min_length=1)
    kubernetesVersion: Optional[KubernetesVersion] = None
    vpcId: VpcId
    privateSubnetIds: dict[AvailabilityZone, SubnetId] = pydantic.Field(min_length=1)
    nodeSecurityGroupIds: list[SecurityGroupId] = pydantic.Field(min_length=1, description="the cluster security group")


class AwsClusterConfig(Block):
    create: Optional[CreateCluster] = None
    existing: Optional[ExistingCluster] = None

    @pydantic.model_validator(mode="after")
    def _exactly_one(self) -> "AwsClusterConfig":
        if (self.create is None) == (self.existing is None):
            raise ValueError("set exactly one of create, existing")
        return self


class SystemNodeGroupConfig(Block):
    """CPU nodes for the platform pods (Dynamo operator, CoreDNS, CSI controllers, NFD master)."""

    instanceTypes: list[str] = pydantic.Field(default_factory=lambda: ["m7i.2xlarge"], min_length=1)
    minSize: int = pydantic.Field(default=2, ge=1)
    desiredSize: int = pydantic.Field(default=2, ge=1)
    maxSize: int = pydantic.Field(default=4, ge=1)
    diskSizeGiB: int = pydantic.Field(default=100, ge=20)


class NodeFacts(Block):
    """What a node of an unmanaged, non-EC2 pool holds (an on-premises InfiniBand cluster, say)."""

    gpu: str
    gpus: int = pydantic.Field(gt=0)
    arch: Literal["x86_64", "arm64"] = "x86_64"


class NodePoolConfig(Block):
    name: DnsLabel
    managed: bool = True
    instanceType: Optional[str] = None
    nodeFacts: Optional[NodeFacts] = None
    gpuProduct: Optional[str] = pydantic.Field(default=None, description="nvidia.com/gpu.product override")
    availabilityZone: Optional[AvailabilityZone] = None
    subnetId: Optional[SubnetId] = None
    minSize: int = pydantic.Field(default=0, ge=0)
    desiredSize: int = pydantic.Field(ge=0)
    maxSize: int = pydantic.Field(ge=1)
    capacityType: Literal["on-demand", "spot", "capacity-block"] = "on-demand"
    capacityReservationId: Optional[ReservationId] = None
    fabric: Optional[Fabric] = pydantic.Field(default=None, description="default: efa on EFA-capable types, else none")
    rootVolumeGiB: int = pydantic.Field(default=200, ge=50)


class EfsSettings(Block):
    directoryPerms: Annotated[str, pydantic.Field(pattern=r"^[0-7]{3}$")] = "700"
    basePath: Annotated[str, pydantic.Field(pattern=r"^/[A-Za-z0-9/_-]*$")] = "/nemotron-model-cache"


class FsxSettings(Block):
    perUnitStorageThroughput: Literal[125, 250, 500, 1000] = 250
    availabilityZone: Optional[AvailabilityZone] = None
    fileSystemTypeVersion: Literal["2.15"] = "2.15"
    dataCompressionType: Literal["NONE", "LZ4"] = "LZ4"


class ModelCacheStorageConfig(Block):
    """The RWX StorageClass named `modelCache.storageClassName`; FSx capacity is `modelCache.size`."""

    backend: Literal["efs", "fsx"]
    protect: bool = False
    efs: EfsSettings = EfsSettings()
    fsx: FsxSettings = FsxSettings()


class DevicePluginsConfig(Block):
    """Which device plugins the stack installs (each only where a pool needs it). Turn one off on a cluster
    that already runs it, e.g. through the NVIDIA GPU Operator or Network Operator."""

    nvidia: bool = True
    efa: bool = True
    rdmaSharedDevice: bool = True


class AwsConfig(Block):
    region: Region
    cluster: Optional[AwsClusterConfig] = None
    systemNodeGroup: SystemNodeGroupConfig = SystemNodeGroupConfig()
    nodePools: list[NodePoolConfig] = pydantic.Field(default_factory=list)
    devicePlugins: DevicePluginsConfig = DevicePluginsConfig()
    modelCacheStorage: Optional[ModelCacheStorageConfig] = None
    tags: dict[str, str] = pydantic.Field(default_factory=dict)

    def fsx_availability_zone(self) -> Optional[str]:
        """`modelCacheStorage.fsx.availabilityZone`, else the one AZ all managed GPU pools share."""
        if self.modelCacheStorage and self.modelCacheStorage.fsx.availabilityZone:
            return self.modelCacheStorage.fsx.availabilityZone
        zones = {p.availabilityZone for p in self.nodePools if p.managed and p.availabilityZone}
        return zones.pop() if len(zones) == 1 else None


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


def recipe_gpu(recipe: Recipe, aws_catalog: AwsCatalog) -> Optional[str]:
    return aws_catalog.gpu_of_product(recipe.gpu_products[0])


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _gib(quantity: str) -> Optional[float]:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Gi|Ti)", quantity)
    return float(match[1]) * (1024 if match[2] == "Ti" else 1) if match else None


def _check_cluster(config: "StackConfig", aws: AwsConfig) -> list[ConfigError]:
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
                errors.append(ConfigError(f"aws.cluster.create.endpointPublicAccessCidrs[{index}]", f"{cidr} opens the API endpoint to the internet", "specific CIDRs, or [] for a private endpoint"))
        if not 16 <= ipaddress.ip_network(create.vpcCidr, strict=False).prefixlen <= 20:
            errors.append(ConfigError("aws.cluster.create.vpcCidr", f"{create.vpcCidr} is not a /16../20 network"))
        minimum = load_platform().chart.minKubernetes
        if _version(create.kubernetesVersion) < _version(minimum):
            errors.append(ConfigError("aws.cluster.create.kubernetesVersion", f"the Dynamo platform needs Kubernetes >= {minimum}, got {create.kubernetesVersion}"))
    system = aws.systemNodeGroup
    if not system.minSize <= system.desiredSize <= system.maxSize:
        errors.append(ConfigError("aws.systemNodeGroup.desiredSize", f"{system.desiredSize} is not between minSize {system.minSize} and maxSize {system.maxSize}"))
    return errors


def _check_pool(path: str, pool: NodePoolConfig, aws: AwsConfig, aws_catalog: AwsCatalog) -> list[ConfigError]:
    errors: list[ConfigError] = []
    create = aws.cluster.create if aws.cluster else None
    existing = aws.cluster.existing if aws.cluster else None
    if pool.instanceType is not None and pool.instanceType not in aws_catalog.instance_types:
        return [ConfigError(f"{path}.instanceType", f"unknown instance type {pool.instanceType!r}", ", ".join(aws_catalog.instance_types))]
    if (pool.instanceType is None) == (pool.nodeFacts is None) or (pool.managed and pool.nodeFacts):
        allowed = "instanceType" if pool.managed else "instanceType or nodeFacts"
        return [ConfigError(f"{path}.instanceType", "a pool names its nodes by exactly one of instanceType, nodeFacts", allowed)]
    facts = pool_facts(pool, aws_catalog)
    if facts is None:
        return [ConfigError(f"{path}.nodeFacts.gpu", f"unknown GPU {pool.nodeFacts.gpu!r}", ", ".join(aws_catalog.gpus))]
    if not pool.minSize <= pool.desiredSize <= pool.maxSize:
        errors.append(ConfigError(f"{path}.desiredSize", f"{pool.desiredSize} is not between minSize {pool.minSize} and maxSize {pool.maxSize}"))
    if pool.gpuProduct and pool.gpuProduct not in aws_catalog.gpus[facts.gpu].product_labels:
        errors.append(ConfigError(f"{path}.gpuProduct", f"{pool.gpuProduct!r} is not a product label of {facts.gpu}", ", ".join(aws_catalog.gpus[facts.gpu].product_labels)))
    fabric = pool_fabric(pool, facts)
    if fabric == "efa" and not facts.efa_interfaces:
        errors.append(ConfigError(f"{path}.fabric", f"{pool.instanceType or 'these nodes'} has no EFA interfaces", "ib, none" if not pool.managed else "none"))
    if fabric == "ib" and pool.managed:
        errors.append(ConfigError(f"{path}.fabric", "EC2 instances have no InfiniBand; ib is for managed: false pools", "efa, none"))
    if (pool.capacityType == "capacity-block") != (pool.capacityReservationId is not None):
        key = "capacityReservationId" if pool.capacityType == "capacity-block" else "capacityType"
        errors.append(ConfigError(f"{path}.{key}", "capacityReservationId goes with capacityType capacity-block, and only with it"))
    if facts.instance and facts.instance.capacityBlocksOnly and pool.capacityType != "capacity-block":
        errors.append(ConfigError(f"{path}.capacityType", f"{pool.instanceType} is available through Capacity Blocks only", "capacity-block"))
    version = create.kubernetesVersion if create else existing.kubernetesVersion if existing else None
    minimum = facts.instance.minKubernetes if facts.instance else None
    if minimum and version and _version(version) < _version(minimum):
        errors.append(ConfigError(f"{path}.instanceType", f"{pool.instanceType} needs Kubernetes >= {minimum}, the cluster runs {version}"))
    if not pool.managed:
        return errors
    if aws.cluster is None:
        errors.append(ConfigError(f"{path}.managed", "a managed pool needs aws.cluster (create or existing)", "false"))
    elif pool.availabilityZone is None:
        errors.append(ConfigError(f"{path}.availabilityZone", "required for a managed pool (one AZ: cluster placement group)"))
    elif create and pool.availabilityZone not in create.availabilityZones:
        errors.append(ConfigError(f"{path}.availabilityZone", f"{pool.availabilityZone!r} is not a cluster AZ", ", ".join(create.availabilityZones)))
    elif existing and pool.subnetId is None and pool.availabilityZone not in existing.privateSubnetIds:
        errors.append(ConfigError(f"{path}.subnetId", f"no subnet for {pool.availabilityZone} in aws.cluster.existing.privateSubnetIds", "set subnetId"))
    return errors


def _check_storage(config: "StackConfig", aws: AwsConfig) -> list[ConfigError]:
    storage = aws.modelCacheStorage
    if storage is None:
        return []
    errors: list[ConfigError] = []
    if not (aws.cluster and aws.cluster.create):
        errors.append(ConfigError("aws.modelCacheStorage", "the stack creates model-cache storage only for the cluster it creates", "aws.cluster.create"))
    unused = "efs" if storage.backend == "fsx" else "fsx"
    if unused in storage.model_fields_set:
        errors.append(ConfigError(f"aws.modelCacheStorage.{unused}", f"set, but backend is {storage.backend}"))
    if storage.backend == "fsx":
        size = _gib(config.modelCache.size)
        if size is None or not (size == FSX_FIRST_STEP_GIB or (size > 0 and size % FSX_STEP_GIB == 0)):
            errors.append(ConfigError("modelCache.size", f"FSx for Lustre PERSISTENT_2 capacity must be {FSX_FIRST_STEP_GIB}Gi or a multiple of {FSX_STEP_GIB}Gi (got {config.modelCache.size})"))
        zones = sorted({p.availabilityZone for p in aws.nodePools if p.managed and p.availabilityZone})
        zone, create = aws.fsx_availability_zone(), aws.cluster.create if aws.cluster else None
        if zone is None:
            errors.append(ConfigError("aws.modelCacheStorage.fsx.availabilityZone", f"GPU pools are in {zones or 'no AZ'}; name the AZ of the file system"))
        elif create and zone not in create.availabilityZones:
            errors.append(ConfigError("aws.modelCacheStorage.fsx.availabilityZone", f"{zone!r} is not a cluster AZ", ", ".join(create.availabilityZones)))
    return errors


def target_pool(config: "StackConfig", index: int, recipe: Recipe, aws_catalog: AwsCatalog) -> tuple[Optional[str], Optional[ConfigError]]:
    """The pool a target is placed on: `targets[i].nodePool`, or the only pool with the target's GPU."""
    target = config.targets[index]
    pools = config.aws.nodePools if config.aws else []
    names = [p.name for p in pools]
    path = f"targets[{index}].nodePool"
    if target.nodePool is not None:
        if target.nodePool not in names:
            return None, ConfigError(path, f"unknown node pool {target.nodePool!r}", ", ".join(names) or "none defined in aws.nodePools")
        return target.nodePool, None
    if not pools:
        return None, None
    gpu = recipe_gpu(recipe, aws_catalog)
    candidates = [p.name for p in pools if (f := pool_facts(p, aws_catalog)) and f.gpu == gpu]
    if len(candidates) != 1:
        problem = f"no pool has {gpu} GPUs" if not candidates else f"several pools have {gpu} GPUs"
        return None, ConfigError(path, f"{problem} for {target.id!r}; name one", ", ".join(candidates or names))
    return candidates[0], None


def _check_placements(config: "StackConfig", catalog: Catalog, aws_catalog: AwsCatalog) -> list[ConfigError]:
    from serving_stack.plan.manifests import gpus_used  # serving_stack.plan.manifests imports serving_stack.config: import at use

    errors: list[ConfigError] = []
    pools = {p.name: (i, p) for i, p in enumerate(config.aws.nodePools if config.aws else [])}
    gpus_on: dict[str, int] = {}
    for index, target in enumerate(config.targets):
        if target.id not in catalog.recipes:
            continue
        recipe = catalog.recipe(target.id)
        name, error = target_pool(config, index, recipe, aws_catalog)
        errors += [error] if error else []
        facts = pool_facts(pools[name][1], aws_catalog) if name else None
        if facts is None:
            continue
        path, pool = f"targets[{index}].nodePool", pools[name][1]
        gpu = recipe_gpu(recipe, aws_catalog)
        arch = aws_catalog.gpus[gpu].arch if gpu else None
        if gpu != facts.gpu:
            errors.append(ConfigError(path, f"{target.id!r} needs {gpu} GPUs; pool {name!r} has {facts.gpu}"))
        if arch and facts.arch != arch:
            errors.append(ConfigError(path, f"{target.id!r} needs {arch} nodes; pool {name!r} is {facts.arch}"))
        if recipe.disaggregated and pool_fabric(pool, facts) == "none":
            errors.append(ConfigError(path, f"disaggregated {target.id!r} needs a KV-transfer fabric; pool {name!r} has none", "a pool with fabric efa or ib"))
        for component in recipe.worker_components():
            if recipe.gpus_per_replica(component) > facts.gpus_per_node:
                errors.append(ConfigError(path, f"{component['name']} asks {recipe.gpus_per_replica(component)} GPUs per pod; a node of pool {name!r} holds {facts.gpus_per_node}"))
        gpus_on[name] = gpus_on.get(name, 0) + gpus_used(recipe, target)
    for name, gpus in gpus_on.items():
        index, pool = pools[name]
        capacity = pool.maxSize * pool_facts(pool, aws_catalog).gpus_per_node
        if gpus > capacity:
            errors.append(ConfigError(f"aws.nodePools[{index}].maxSize", f"targets on pool {name!r} use {gpus} GPUs, more than {pool.maxSize} nodes x {capacity // pool.maxSize} GPUs"))
    return errors


def check_aws(config: "StackConfig", catalog: Catalog, aws_catalog: Optional[AwsCatalog] = None) -> list[ConfigError]:
    """Every cross-field problem of the `aws` block and of target placement, each naming its key path."""
    aws_catalog = aws_catalog or load_aws_catalog()
    aws = config.aws
    if aws is None:
        if config.kubernetes.cluster.source == "eks":
            return [ConfigError("aws", "required when kubernetes.cluster.source is eks")]
        return [ConfigError(f"targets[{i}].nodePool", "no aws.nodePools are defined") for i, t in enumerate(config.targets) if t.nodePool]
    errors = _check_cluster(config, aws)
    seen: set[str] = set()
    for index, pool in enumerate(aws.nodePools):
        if pool.name in seen:
            errors.append(ConfigError(f"aws.nodePools[{index}].name", f"duplicate pool name {pool.name!r}"))
        seen.add(pool.name)
        errors += _check_pool(f"aws.nodePools[{index}]", pool, aws, aws_catalog)
    errors += _check_storage(config, aws)
    if errors:
        return errors
    return _check_placements(config, catalog, aws_catalog)
