"""Every problem of the `aws` node pool blocks, each with its key path: shapes the facts decide (instance
type, GPU, fabric, zone, how AWS sells the type) and the rules AWS documents for them (a reservation id with
Capacity Blocks and ODCRs, Kubernetes >= 1.33 for GB200, a Capacity Block group upgraded only at size 0).
The cluster block's checks are `cluster_checks`."""

from __future__ import annotations

from typing import Optional

from serving_stack.config.aws import AwsConfig, NodePoolConfig
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.instance_types import AwsCatalog
from serving_stack.plan.pools import (
    MAX_LOCAL_ZONE_SUBNETS,
    RESERVED_CAPACITY_TYPES,
    PoolFacts,
    cluster_version,
    pool_fabric,
    pool_facts,
)
from serving_stack.plan.quantities import version_tuple
from serving_stack.plan.zones import check_pool_zone


def _check_capacity(path: str, pool: NodePoolConfig, facts: PoolFacts) -> list[ConfigError]:
    """The capacity type is one AWS sells the instance type as; reservations name their id, others none."""
    errors: list[ConfigError] = []
    instance = facts.instance
    if instance and pool.capacityType not in instance.capacityTypes:
        errors.append(
            ConfigError(
                f"{path}.capacityType",
                f"{pool.instanceType} is not sold as {pool.capacityType}",
                ", ".join(instance.capacityTypes),
            )
        )
    reserved = pool.capacityType in RESERVED_CAPACITY_TYPES
    if reserved and pool.capacityReservationId is None:
        errors.append(
            ConfigError(
                f"{path}.capacityReservationId",
                f"required with capacityType {pool.capacityType}: the launch template targets the reservation",
            )
        )
    if not reserved and pool.capacityReservationId is not None:
        errors.append(
            ConfigError(
                f"{path}.capacityType",
                "capacityReservationId goes with a reservation",
                ", ".join(RESERVED_CAPACITY_TYPES),
            )
        )
    return errors


def _check_version(path: str, pool: NodePoolConfig, facts: PoolFacts, version: Optional[str]) -> list[ConfigError]:
    """The nodes' version (the pool's, else the cluster's) against the instance type's minimum; a Capacity
    Block group whose version moves is at size 0 (EKS upgrades it only then)."""
    errors: list[ConfigError] = []
    nodes = pool.kubernetesVersion or version
    minimum = facts.instance.minKubernetes if facts.instance else None
    if minimum and nodes and version_tuple(nodes) < version_tuple(minimum):
        errors.append(
            ConfigError(
                f"{path}.instanceType", f"{pool.instanceType} needs Kubernetes >= {minimum}, the cluster runs {nodes}"
            )
        )
    if version is None or not pool.managed:
        return errors
    if pool.kubernetesVersion and version_tuple(pool.kubernetesVersion) > version_tuple(version):
        return [
            *errors,
            ConfigError(f"{path}.kubernetesVersion", f"{pool.kubernetesVersion} is newer than the cluster's {version}"),
        ]
    if pool.capacityType != "capacity-block":
        return errors
    if pool.kubernetesVersion is None:
        errors.append(
            ConfigError(
                f"{path}.kubernetesVersion",
                f"required for capacity-block pool {pool.name!r}: the "
                "version its nodes run, so that an upgrade is seen before it reaches EKS",
                version,
            )
        )
    elif pool.kubernetesVersion != version and (pool.minSize or pool.desiredSize):
        errors.append(
            ConfigError(
                f"{path}.desiredSize",
                f"capacity-block pool {pool.name!r} moves from Kubernetes "
                f"{pool.kubernetesVersion} to {version}; EKS upgrades a Capacity Block group only at "
                "size 0: set minSize and desiredSize to 0 for this up, then kubernetesVersion "
                f"{version!r} and the sizes back",
                "0",
            )
        )
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
        return [
            ConfigError(
                f"{path}.availabilityZone",
                "required for a managed pool (one zone: the reservation's, the placement group's)",
            )
        ]
    zone_error = check_pool_zone(path, zone, facts.instance, aws, aws_catalog.regions)
    if zone_error:
        return [zone_error]
    local = aws_catalog.regions.local_zone(aws.region, zone) is not None
    if create and not local and zone not in create.availabilityZones:
        return [
            ConfigError(
                f"{path}.availabilityZone", f"{zone!r} is not a cluster AZ", ", ".join(create.availabilityZones)
            )
        ]
    if existing and pool.subnetId is None and zone not in existing.privateSubnetIds:
        return [
            ConfigError(
                f"{path}.subnetId", f"no subnet for {zone} in aws.cluster.existing.privateSubnetIds", "set subnetId"
            )
        ]
    return []


def _check_pool(path: str, pool: NodePoolConfig, aws: AwsConfig, aws_catalog: AwsCatalog) -> list[ConfigError]:
    errors: list[ConfigError] = []
    if pool.instanceType is not None and pool.instanceType not in aws_catalog.instance_types:
        return [
            ConfigError(
                f"{path}.instanceType",
                f"unknown instance type {bounded(pool.instanceType)}",
                ", ".join(aws_catalog.instance_types),
            )
        ]
    if (pool.instanceType is None) == (pool.nodeFacts is None) or (pool.managed and pool.nodeFacts):
        allowed = "instanceType" if pool.managed else "instanceType or nodeFacts"
        return [
            ConfigError(
                f"{path}.instanceType", "a pool names its nodes by exactly one of instanceType, nodeFacts", allowed
            )
        ]
    facts = pool_facts(pool, aws_catalog)
    if facts is None:
        gpu = pool.nodeFacts.gpu if pool.nodeFacts else None
        return [ConfigError(f"{path}.nodeFacts.gpu", f"unknown GPU {bounded(gpu)}", ", ".join(aws_catalog.gpus))]
    if not pool.minSize <= pool.desiredSize <= pool.maxSize:
        errors.append(
            ConfigError(
                f"{path}.desiredSize",
                f"{pool.desiredSize} is not between minSize {pool.minSize} and maxSize {pool.maxSize}",
            )
        )
    labels = aws_catalog.gpus[facts.gpu].product_labels
    if pool.gpuProduct and pool.gpuProduct not in labels:
        errors.append(
            ConfigError(
                f"{path}.gpuProduct",
                f"{bounded(pool.gpuProduct)} is not a product label of {facts.gpu}",
                ", ".join(labels),
            )
        )
    fabric = pool_fabric(pool, facts)
    if fabric == "efa" and not facts.efa_interfaces:
        errors.append(
            ConfigError(
                f"{path}.fabric",
                f"{pool.instanceType or 'these nodes'} has no EFA interfaces",
                "ib, none" if not pool.managed else "none",
            )
        )
    if fabric == "ib" and pool.managed:
        errors.append(
            ConfigError(
                f"{path}.fabric", "EC2 instances have no InfiniBand; ib is for managed: false pools", "efa, none"
            )
        )
    errors += _check_capacity(path, pool, facts)
    errors += _check_version(path, pool, facts, cluster_version(aws))
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
        errors.append(
            ConfigError(
                f"aws.nodePools[{local[MAX_LOCAL_ZONE_SUBNETS]}].availabilityZone",
                f"the created VPC has room for {MAX_LOCAL_ZONE_SUBNETS} Local Zone pool subnets",
                "fewer Local Zone pools, or subnetId",
            )
        )
    return errors
