"""The model cache's RWX storage the stack creates (EFS or FSx for Lustre), resolved and checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from serving_stack.config.aws import AwsConfig
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError
from serving_stack.facts import Facts
from serving_stack.facts.aws_platform import CsiAddon
from serving_stack.facts.regions import AwsRegions
from serving_stack.names import MODEL_CACHE_CLAIM
from serving_stack.plan.quantities import gib

FSX_FIRST_STEP_GIB, FSX_STEP_GIB = 1200, 2400


@dataclass(frozen=True)
class EfsOptions:
    directory_perms: str
    base_path: str


@dataclass(frozen=True)
class FsxOptions:
    per_unit_storage_throughput: int
    file_system_type_version: str
    data_compression_type: str
    availability_zone: str
    capacity_gib: int


@dataclass(frozen=True)
class StoragePlan:
    backend: Literal["efs", "fsx"]
    storage_class_name: str
    protect: bool
    claim_name: str
    csi_addon: CsiAddon
    efs: Optional[EfsOptions]
    fsx: Optional[FsxOptions]


def fsx_availability_zone(aws: AwsConfig) -> Optional[str]:
    """`modelCacheStorage.fsx.availabilityZone`, else the one AZ all managed GPU pools share."""
    if aws.modelCacheStorage and aws.modelCacheStorage.fsx.availabilityZone:
        return aws.modelCacheStorage.fsx.availabilityZone
    zones = {p.availabilityZone for p in aws.nodePools if p.managed and p.availabilityZone}
    return zones.pop() if len(zones) == 1 else None


def check_storage(config: StackConfig, aws: AwsConfig, cache_size: str, regions: AwsRegions) -> list[ConfigError]:
    """`cache_size`: the model-cache claim's size (configured, else upstream's). EFS is refused for a stack
    with a Local Zone pool: EFS has no mount target in a Local Zone and the mount helper's cross-zone
    fallback needs describe permissions a node role lacks (AWS-FACTS.md, corrections 2026-12)."""
    storage = aws.modelCacheStorage
    if storage is None:
        return []
    errors: list[ConfigError] = []
    create = aws.cluster.create if aws.cluster else None
    if create is None:
        errors.append(
            ConfigError(
                "aws.modelCacheStorage",
                "the stack creates model-cache storage only for the cluster it creates",
                "aws.cluster.create",
            )
        )
    local = [
        (index, pool)
        for index, pool in enumerate(aws.nodePools)
        if pool.managed and pool.availabilityZone and regions.local_zone(aws.region, pool.availabilityZone)
    ]
    if storage.backend == "efs" and local:
        index, pool = local[0]
        errors.append(
            ConfigError(
                "aws.modelCacheStorage.backend",
                f"efs cannot be mounted by pool {pool.name!r} (aws.nodePools[{index}]) in Local Zone "
                f"{pool.availabilityZone}: EFS has mount targets only in Availability Zones",
                "fsx (its clients reach it across the VPC), or the Local Zone pool removed",
            )
        )
    unused = "efs" if storage.backend == "fsx" else "fsx"
    if unused in storage.model_fields_set:
        errors.append(ConfigError(f"aws.modelCacheStorage.{unused}", f"set, but backend is {storage.backend}"))
    if storage.backend == "fsx":
        size = gib(cache_size)
        if size is None or not (size == FSX_FIRST_STEP_GIB or (size > 0 and size % FSX_STEP_GIB == 0)):
            errors.append(
                ConfigError(
                    "modelCache.size",
                    f"FSx for Lustre PERSISTENT_2 capacity must be {FSX_FIRST_STEP_GIB}Gi "
                    f"or a multiple of {FSX_STEP_GIB}Gi (got {cache_size})",
                )
            )
        zones = sorted({p.availabilityZone for p in aws.nodePools if p.managed and p.availabilityZone})
        zone = fsx_availability_zone(aws)
        if zone is None:
            errors.append(
                ConfigError(
                    "aws.modelCacheStorage.fsx.availabilityZone",
                    f"GPU pools are in {zones or 'no AZ'}; name the AZ of the file system",
                )
            )
        elif create and zone not in create.availabilityZones:
            errors.append(
                ConfigError(
                    "aws.modelCacheStorage.fsx.availabilityZone",
                    f"{zone!r} is not a cluster AZ",
                    ", ".join(create.availabilityZones),
                )
            )
    return errors


def plan_storage(config: StackConfig, facts: Facts) -> Optional[StoragePlan]:
    """What `ModelCacheStorage` builds (the config must have passed `check_storage`)."""
    aws = config.aws
    if aws is None or aws.modelCacheStorage is None:
        return None
    storage, addons = aws.modelCacheStorage, facts.aws.platform.eksAddons
    efs = fsx = None
    if storage.backend == "efs":
        efs = EfsOptions(directory_perms=storage.efs.directoryPerms, base_path=storage.efs.basePath)
    else:
        zone, size = fsx_availability_zone(aws), config.modelCache.size
        if zone is None or size is None:
            raise ValueError("the FSx zone and the cache size are resolved before planning (build_plan does both)")
        fsx = FsxOptions(
            per_unit_storage_throughput=storage.fsx.perUnitStorageThroughput,
            file_system_type_version=storage.fsx.fileSystemTypeVersion,
            data_compression_type=storage.fsx.dataCompressionType,
            availability_zone=zone,
            capacity_gib=int(gib(size) or 0),
        )
    return StoragePlan(
        backend=storage.backend,
        storage_class_name=config.modelCache.storageClassName,
        protect=storage.protect,
        claim_name=MODEL_CACHE_CLAIM,
        csi_addon=addons.efsCsiDriver if storage.backend == "efs" else addons.fsxCsiDriver,
        efs=efs,
        fsx=fsx,
    )
