"""Loads `catalog/node_ready.yaml` into the planner's `NodeReadyFacts` (every figure with a source)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.facts.catalog import CATALOG_DIR
from serving_stack.facts.data import Data, load_model


class Phase(Data):
    seconds: float = pydantic.Field(gt=0)
    estimate: bool
    source: str = pydantic.Field(min_length=10)


class Figure(Data):
    value: Optional[float] = pydantic.Field(default=None, gt=0)
    estimate: bool
    source: str = pydantic.Field(min_length=10)


class FileSystems(Data):
    efs: Figure
    fsxPerTiB: Figure


class NodeReadyFile(Data):
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
    return load_model(root / "node_ready.yaml", NodeReadyFile, root)
