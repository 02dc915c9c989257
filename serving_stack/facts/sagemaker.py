"""SageMaker facts as data: instance types (GPUs, storage, price) and the pinned LMI container.

`catalog/sagemaker_instances.yaml` and `catalog/sagemaker_lmi.yaml`; code only interprets them, so a new
instance type, region or image tag is a data change.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional

import pydantic
import yaml

from serving_stack.facts.catalog import CATALOG_DIR
from serving_stack.errors import from_validation_error


class _Data(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class InstanceType(_Data):
    gpus: int = pydantic.Field(gt=0)
    gpu: str
    gpuMemoryGb: int = pydantic.Field(gt=0)
    storage: Literal["ebs", "nvme"] = pydantic.Field(
        description="ebs: the variant takes VolumeSizeInGB and a volume KMS key; nvme: local storage only, "
        "hardware-encrypted, and SageMaker rejects both settings")
    hourlyUsd: Optional[float] = pydantic.Field(gt=0)
    priceSource: str


class InstancesFile(_Data):
    instances: dict[str, InstanceType]


class Timeouts(_Data):
    modelDataDownload: int = pydantic.Field(ge=60, le=3600)
    containerStartupHealthCheck: int = pydantic.Field(ge=60, le=3600)


class HuggingFaceRepo(_Data):
    options: dict[str, str] = {}


class LmiFile(_Data):
    inferenceAmiVersion: str
    images: dict[str, str]
    environment: dict[str, str]
    timeouts: Timeouts
    volumeSizeGb: int = pydantic.Field(ge=1, le=512)
    repositories: dict[str, HuggingFaceRepo]


def _load(model: type[_Data], path: Path) -> _Data:
    try:
        return model.model_validate(yaml.safe_load(path.read_text()))
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, model, prefix=f"catalog/{path.name}: ") from None


@functools.lru_cache(maxsize=4)
def load_instances(root: Path = CATALOG_DIR) -> dict[str, InstanceType]:
    return _load(InstancesFile, root / "sagemaker_instances.yaml").instances


@functools.lru_cache(maxsize=4)
def load_lmi(root: Path = CATALOG_DIR) -> LmiFile:
    return _load(LmiFile, root / "sagemaker_lmi.yaml")
