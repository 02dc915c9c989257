"""Loads `catalog/node_ready.yaml` into the planner's `NodeReadyFacts` (every figure with a source)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional

import pydantic
import yaml

from serving_stack.errors import from_validation_error
from serving_stack.facts.catalog import CATALOG_DIR


class _Data(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class Phase(_Data):
    seconds: float = pydantic.Field(gt=0)
    estimate: bool
    source: str = pydantic.Field(min_length=10)


class Figure(_Data):
    value: Optional[float] = pydantic.Field(default=None, gt=0)
    estimate: bool
    source: str = pydantic.Field(min_length=10)


class FileSystems(_Data):
    efs: Figure
    fsxPerTiB: Figure


class NodeReadyFile(_Data):
    schemaVersion: Literal[1]
    phases: dict[
        Literal[
            "autoscalerReaction",
            "instanceBootToRegistered",
            "devicePluginsAdvertise",
            "runtimeImagePullSecondsPerCompressedGB",
            "engineStart",
        ],
        Phase,
    ]
    runtimeImageCompressedGB: Figure
    checkpointGB: Figure
    warmLoadMBps: Figure
    fileSystemReadMBps: FileSystems
    nodeReadCapMBps: Figure


@functools.lru_cache(maxsize=4)
def load_node_ready_file(root: Path = CATALOG_DIR) -> NodeReadyFile:
    try:
        return NodeReadyFile.model_validate(yaml.safe_load((root / "node_ready.yaml").read_text()))
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, NodeReadyFile, prefix="catalog/node_ready.yaml: ") from None
