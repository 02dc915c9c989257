"""SageMaker facts as data: instance types (GPUs, storage, price), the pinned LMI container, the checkpoints
the Hugging Face path serves and how a model is judged to fit.

`catalog/sagemaker_instances.yaml` and `catalog/sagemaker_lmi.yaml`; code only interprets them, so a new
instance type, region or image tag is a data change. The loaders refuse data that contradicts its own
stated rule (an instance the SDK's storage rule calls NVMe recorded as EBS).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.facts.data import DATA_DIR, Data, load_model

Storage = Literal["ebs", "nvme"]
GpuArchitecture = Literal["ampere", "ada", "hopper", "blackwell"]
Precision = Literal["bf16", "nvfp4"]
VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


class Estimate(Data):
    value: float = pydantic.Field(gt=0)
    basis: str = pydantic.Field(min_length=1)


class StorageRule(Data):
    """The SageMaker SDK's rule for instance types without EBS volumes (see the data file for its source)."""

    familiesContaining: tuple[str, ...]
    familyPrefixes: tuple[str, ...]
    source: str = pydantic.Field(min_length=1)

    def says_nvme(self, instance_type: str) -> bool:
        family = instance_type.split(".")[1]
        return any(part in family for part in self.familiesContaining) or family.startswith(self.familyPrefixes)


class InstanceType(Data):
    gpus: int = pydantic.Field(gt=0)
    gpu: str
    gpuArchitecture: GpuArchitecture
    gpuMemoryGb: int = pydantic.Field(gt=0, description="per GPU")
    storage: Storage = pydantic.Field(
        description="ebs: the variant takes VolumeSizeInGB and a volume KMS key; nvme: local storage only, "
        "hardware-encrypted, and SageMaker rejects both settings"
    )
    localNvmeGb: Optional[int] = pydantic.Field(default=None, gt=0)
    storageSource: str = pydantic.Field(min_length=1)
    hourlyUsd: Optional[float] = pydantic.Field(gt=0)
    priceSource: str

    @pydantic.model_validator(mode="after")
    def _nvme_has_local_storage(self) -> InstanceType:
        if (self.storage == "nvme") != (self.localNvmeGb is not None):
            raise ValueError("storage nvme needs localNvmeGb, and localNvmeGb means storage nvme")
        return self


class InstancesFile(Data):
    storageRule: StorageRule
    provisioningSeconds: Estimate
    instances: dict[str, InstanceType]

    @pydantic.model_validator(mode="after")
    def _storage_follows_the_rule(self) -> InstancesFile:
        for name, instance in self.instances.items():
            if not re.match(r"^ml\.[a-z0-9-]+\.[a-z0-9]+$", name):
                raise ValueError(f"{name}: not an ml.<family>.<size> instance type")
            if self.storageRule.says_nvme(name) and instance.storage != "nvme":
                raise ValueError(
                    f"{name}: the storage rule ({self.storageRule.source.split(':')[0]}) says local NVMe, "
                    "the data says ebs"
                )
        return self


class Timeouts(Data):
    modelDataDownload: Optional[int] = pydantic.Field(ge=60, le=3600)
    containerStartupHealthCheck: int = pydantic.Field(ge=60, le=3600)


class Container(Data):
    repository: str
    tag: str
    lmiVersion: str = pydantic.Field(pattern=VERSION.pattern)
    vllmVersion: str = pydantic.Field(pattern=VERSION.pattern)
    source: str = pydantic.Field(min_length=1)


class Registries(Data):
    source: str = pydantic.Field(min_length=1)
    accounts: dict[str, str]


class Fit(Data):
    gpuMemoryUtilization: Estimate
    perGpuOverheadGb: Estimate
    minimumCacheGb: Estimate
    nativeFp4Architectures: tuple[GpuArchitecture, ...]
    nativeFp4Source: str = pydantic.Field(min_length=1)


class HuggingFaceRepo(Data):
    precision: Precision
    weightsGb: float = pydantic.Field(gt=0)
    weightsBasis: str = pydantic.Field(min_length=1)
    minimumVllm: str = pydantic.Field(pattern=VERSION.pattern)
    vllmBasis: str = pydantic.Field(min_length=1)
    options: dict[str, str] = pydantic.Field(default_factory=dict)


class EnvironmentLimits(Data):
    """What SageMaker's CreateModel accepts as a container's environment."""

    maxEntries: int = pydantic.Field(ge=1)
    maxKeyLength: int = pydantic.Field(ge=1)
    maxValueLength: int = pydantic.Field(ge=1)
    source: str


class LmiFile(Data):
    container: Container
    inferenceAmiVersion: str
    registries: Registries
    environmentLimits: EnvironmentLimits
    environment: dict[str, str]
    timeouts: Timeouts
    volumeSizeGb: int = pydantic.Field(ge=1, le=512)
    fit: Fit
    repositories: dict[str, HuggingFaceRepo]

    def image(self, region: str) -> Optional[str]:
        """The pinned image in `region`'s Deep Learning Containers registry, or None where none is listed."""
        account = self.registries.accounts.get(region)
        if account is None:
            return None
        suffix = ".amazonaws.com.cn" if region.startswith("cn-") else ".amazonaws.com"
        return f"{account}.dkr.ecr.{region}{suffix}/{self.container.repository}:{self.container.tag}"


@functools.lru_cache(maxsize=4)
def load_instances_file(root: Path = DATA_DIR) -> InstancesFile:
    return load_model(root / "sagemaker_instances.yaml", InstancesFile, root)


def load_instances(root: Path = DATA_DIR) -> dict[str, InstanceType]:
    return load_instances_file(root).instances


@functools.lru_cache(maxsize=4)
def load_lmi(root: Path = DATA_DIR) -> LmiFile:
    return load_model(root / "sagemaker_lmi.yaml", LmiFile, root)
