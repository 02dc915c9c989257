"""Loads `catalog/node_ready.yaml` into the planner's `NodeReadyFacts` (every figure with a source)."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional

import pydantic
import yaml

from nemotron.catalog import CATALOG_DIR
from nemotron.errors import from_validation_error
from serving_stack.plan.node_ready import NodeReadyFacts


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
    phases: dict[Literal["autoscalerReaction", "instanceBootToRegistered", "devicePluginsAdvertise",
                         "runtimeImagePullSecondsPerCompressedGB", "engineStart"], Phase]
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


def _value(figure: Figure) -> float:
    assert figure.value is not None, figure.source
    return figure.value


def node_ready_facts(data: NodeReadyFile) -> NodeReadyFacts:
    phases = data.phases
    estimated = {
        "autoscaler": phases["autoscalerReaction"].estimate,
        "boot": phases["instanceBootToRegistered"].estimate,
        "device plugins": phases["devicePluginsAdvertise"].estimate,
        "prewarm": data.checkpointGB.estimate or data.nodeReadCapMBps.estimate,
        "image pull": phases["runtimeImagePullSecondsPerCompressedGB"].estimate or data.runtimeImageCompressedGB.estimate,
        "model load": data.checkpointGB.estimate or data.warmLoadMBps.estimate,
        "engine start": phases["engineStart"].estimate,
    }
    return NodeReadyFacts(
        autoscaler_reaction_s=phases["autoscalerReaction"].seconds,
        boot_to_registered_s=phases["instanceBootToRegistered"].seconds,
        device_plugins_s=phases["devicePluginsAdvertise"].seconds,
        image_pull_s_per_gb=phases["runtimeImagePullSecondsPerCompressedGB"].seconds,
        engine_start_s=phases["engineStart"].seconds,
        image_gb=_value(data.runtimeImageCompressedGB),
        checkpoint_gb=_value(data.checkpointGB),
        warm_load_mb_s=_value(data.warmLoadMBps),
        node_read_cap_mb_s=_value(data.nodeReadCapMBps),
        estimated_phases=tuple(name for name, flag in estimated.items() if flag),
    )
