"""SageMaker facts as data: instance types (GPUs, storage, price), the pinned LMI container, the checkpoints
the Hugging Face path serves and how a model is judged to fit.

`catalog/sagemaker_instances.yaml` and `catalog/sagemaker_lmi.yaml`; code only interprets them, so a new
instance type, region or image tag is a data change. The loaders refuse data that contradicts its own
stated rule (an instance the SDK's storage rule calls NVMe recorded as EBS).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal, Optional

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
    """An image the Hugging Face path may run and the vLLM it bundles. `tag` None: named by its data file but
    not read, so the image is a placeholder that the offline render may show and `pulumi up` refuses."""

    name: str = pydantic.Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    release: str = pydantic.Field(min_length=1)
    repository: str = pydantic.Field(min_length=1)
    tag: Optional[str] = pydantic.Field(pattern=r"^[A-Za-z0-9._-]+$")
    vllmVersion: str = pydantic.Field(pattern=VERSION.pattern)
    argumentForm: str
    source: str = pydantic.Field(min_length=1)


class TensorParallel(Data):
    variable: str = pydantic.Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    value: Literal["max", "gpus"] = pydantic.Field(description="max: the container's own word; gpus: the count")


class ArgumentForm(Data):
    """How a container reads vLLM engine arguments: environment variables `<prefix><FLAG>`."""

    prefix: str = pydantic.Field(pattern=r"^[A-Z][A-Z0-9_]*_$")
    flagValue: str
    renames: dict[str, str] = pydantic.Field(default_factory=dict)
    modelVariable: str = pydantic.Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    tensorParallel: TensorParallel
    environment: dict[str, str] = pydantic.Field(default_factory=dict)
    source: str = pydantic.Field(min_length=1)

    def variable(self, flag: str) -> str:
        name = flag.removeprefix("--")
        return self.renames.get(name, self.prefix + name.upper().replace("-", "_"))

    def environment_of(self, arguments: Mapping[str, Optional[str]]) -> dict[str, str]:
        return {self.variable(flag): self.flagValue if value is None else value for flag, value in arguments.items()}


class Unverified(Data):
    architectures: tuple[GpuArchitecture, ...] = pydantic.Field(min_length=1)
    what: str = pydantic.Field(min_length=1)


EngineFlag = Annotated[str, pydantic.StringConstraints(pattern=r"^--[a-z0-9][a-z0-9-]*$")]


class EngineArguments(Data):
    """The vLLM arguments a checkpoint needs, as vLLM spells them; a bare flag has the value None."""

    source: str = pydantic.Field(min_length=1)
    common: dict[EngineFlag, Optional[str]]
    byArchitecture: dict[GpuArchitecture, dict[EngineFlag, Optional[str]]] = pydantic.Field(default_factory=dict)
    unverified: tuple[Unverified, ...] = ()

    def for_architecture(self, architecture: GpuArchitecture) -> dict[str, Optional[str]]:
        return {**self.common, **self.byArchitecture.get(architecture, {})}

    def unverified_on(self, architecture: GpuArchitecture) -> tuple[str, ...]:
        return tuple(item.what for item in self.unverified if architecture in item.architectures)


class Registries(Data):
    source: str = pydantic.Field(min_length=1)
    accounts: dict[str, str]


class Fit(Data):
    gpuMemoryUtilization: Estimate
    perGpuOverheadGb: Estimate
    minimumCacheGb: Estimate


class RunsAs(Data):
    path: str = pydantic.Field(pattern=r"^[a-z0-9-]+$")
    basis: str = pydantic.Field(min_length=1)


class HuggingFaceRepo(Data):
    precision: Precision
    weightsGb: float = pydantic.Field(gt=0)
    weightsBasis: str = pydantic.Field(min_length=1)
    minimumVllm: str = pydantic.Field(pattern=VERSION.pattern)
    vllmSource: str = pydantic.Field(min_length=1)
    runsAs: RunsAs
    engineArguments: EngineArguments


class EnvironmentLimits(Data):
    """What SageMaker's CreateModel accepts as a container's environment."""

    maxEntries: int = pydantic.Field(ge=1)
    maxKeyLength: int = pydantic.Field(ge=1)
    maxValueLength: int = pydantic.Field(ge=1)
    source: str


class LmiFile(Data):
    containers: tuple[Container, ...] = pydantic.Field(min_length=1)
    argumentForms: dict[str, ArgumentForm]
    inferenceAmiVersion: str
    registries: Registries
    environmentLimits: EnvironmentLimits
    timeouts: Timeouts
    volumeSizeGb: int = pydantic.Field(ge=1, le=512)
    fit: Fit
    repositories: dict[str, HuggingFaceRepo]

    @pydantic.model_validator(mode="after")
    def _forms_exist(self) -> LmiFile:
        for container in self.containers:
            if container.argumentForm not in self.argumentForms:
                raise ValueError(f"container {container.name}: argumentForm {container.argumentForm!r} is not listed")
        return self

    def registry(self, region: str) -> Optional[str]:
        """The Deep Learning Containers registry of `region`, or None where none is listed."""
        account = self.registries.accounts.get(region)
        if account is None:
            return None
        suffix = ".amazonaws.com.cn" if region.startswith("cn-") else ".amazonaws.com"
        return f"{account}.dkr.ecr.{region}{suffix}"

    def image(self, container: Container, region: str) -> Optional[str]:
        """`container`'s image in `region`, or None without a registry there or a tag read."""
        registry = self.registry(region)
        return f"{registry}/{container.repository}:{container.tag}" if registry and container.tag else None

    def first_meeting(self, minimum: str) -> Optional[Container]:
        """The first container (in preference order) whose bundled vLLM is at least `minimum`."""
        return next((c for c in self.containers if version_tuple(c.vllmVersion) >= version_tuple(minimum)), None)

    def newest(self) -> Container:
        return max(self.containers, key=lambda c: version_tuple(c.vllmVersion))


@functools.lru_cache(maxsize=4)
def load_instances_file(root: Path = DATA_DIR) -> InstancesFile:
    return load_model(root / "sagemaker_instances.yaml", InstancesFile, root)


def load_instances(root: Path = DATA_DIR) -> dict[str, InstanceType]:
    return load_instances_file(root).instances


@functools.lru_cache(maxsize=4)
def load_lmi(root: Path = DATA_DIR) -> LmiFile:
    return load_model(root / "sagemaker_lmi.yaml", LmiFile, root)
