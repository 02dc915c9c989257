"""SageMaker facts as data: instance types (GPUs, storage, price) and the pinned LMI container.

`catalog/sagemaker_instances.yaml` and `catalog/sagemaker_lmi.yaml`; code only interprets them, so a new
instance type, region or image tag is a data change.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.facts.data import DATA_DIR, Data, load_model


class InstanceType(Data):
    gpus: int = pydantic.Field(gt=0)
    gpu: str
    gpuMemoryGb: int = pydantic.Field(gt=0)
    storage: Literal["ebs", "nvme"] = pydantic.Field(
        description="ebs: the variant takes VolumeSizeInGB and a volume KMS key; nvme: local storage only, "
        "hardware-encrypted, and SageMaker rejects both settings")
    hourlyUsd: Optional[float] = pydantic.Field(gt=0)
    priceSource: str


class InstancesFile(Data):
    instances: dict[str, InstanceType]


class Timeouts(Data):
    modelDataDownload: int = pydantic.Field(ge=60, le=3600)
    containerStartupHealthCheck: int = pydantic.Field(ge=60, le=3600)


class HuggingFaceRepo(Data):
    options: dict[str, str] = {}


class LmiFile(Data):
    inferenceAmiVersion: str
    images: dict[str, str]
    environment: dict[str, str]
    timeouts: Timeouts
    volumeSizeGb: int = pydantic.Field(ge=1, le=512)
    repositories: dict[str, HuggingFaceRepo]


@functools.lru_cache(maxsize=4)
def load_instances(root: Path = DATA_DIR) -> dict[str, InstanceType]:
    return load_model(root / "sagemaker_instances.yaml", InstancesFile, root).instances


@functools.lru_cache(maxsize=4)
def load_lmi(root: Path = DATA_DIR) -> LmiFile:
    return load_model(root / "sagemaker_lmi.yaml", LmiFile, root)
