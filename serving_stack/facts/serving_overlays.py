"""Proposed overlays of the upstream Dynamo recipes' engine arguments, as data: `catalog/serving_overlays.yaml`.

Where a vLLM target's arguments differ from the model's own vLLM recipe (the SageMaker endpoints'), and what to
do about each difference. The render applies the `apply` entries (`serving_stack.plan.serving.
apply_serving_overlays`; `tools/conformance.py` lists them as intended differences); `tests/test_failover_overlays.py`
keeps the accounting complete against the recipes.
"""

from __future__ import annotations

import datetime
import fnmatch
import functools
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.facts.strict_files import PROJECT_DATA_DIR, Data, load_model


class Reference(Data):
    repository: str
    source: str = pydantic.Field(min_length=1)
    read: datetime.date


class Overlay(Data):
    targets: tuple[str, ...] = pydantic.Field(min_length=1)
    gpus: tuple[str, ...] = pydantic.Field(min_length=1)
    components: Literal["workers", "all"]
    argument: str = pydantic.Field(pattern=r"^--[a-z0-9][a-z0-9-]*$")
    action: Literal["set", "remove", "keep"]
    value: Optional[str]
    decision: Literal["apply", "review", "keep"]
    source: str = pydantic.Field(min_length=1)
    reason: str = pydantic.Field(min_length=1)

    def covers(self, target_id: str, gpu: str, worker: bool, argument: str) -> bool:
        return (
            argument == self.argument
            and gpu in self.gpus
            and (worker or self.components == "all")
            and any(fnmatch.fnmatchcase(target_id, pattern) for pattern in self.targets)
        )

    @pydantic.model_validator(mode="after")
    def _keep_only_kept(self) -> Overlay:
        if (self.action == "keep") != (self.decision == "keep"):
            raise ValueError("action keep goes with decision keep, and only with it")
        return self


class ServingOverlays(Data):
    schemaVersion: Literal[1]
    reference: Reference
    responseArguments: tuple[str, ...]
    droppedByReference: tuple[str, ...]
    gpuArchitectures: dict[str, str]
    gpuArchitecturesSource: str
    overlays: tuple[Overlay, ...]


@functools.cache
def load_serving_overlays(root: Path = PROJECT_DATA_DIR) -> ServingOverlays:
    return load_model(root / "serving_overlays.yaml", ServingOverlays, root)
