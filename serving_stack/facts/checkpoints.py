"""Checkpoint sizes as data (`catalog/checkpoints.yaml`): what the model-cache PVC must hold."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

import pydantic

from serving_stack.facts.data import DATA_DIR, Data, load_model

FILE = "checkpoints.yaml"
BYTES_PER_GB = 10**9


class CheckpointSize(Data):
    sizeGB: float = pydantic.Field(gt=0)
    estimate: bool
    source: str = pydantic.Field(min_length=10)

    @property
    def bytes(self) -> int:
        return int(self.sizeGB * BYTES_PER_GB)


class CheckpointSizes(Data):
    schemaVersion: Literal[1]
    repositories: dict[str, CheckpointSize] = pydantic.Field(min_length=1)
    unlisted: CheckpointSize

    def size(self, repository: str) -> CheckpointSize:
        """The listed size, else the `unlisted` estimate."""
        return self.repositories.get(repository, self.unlisted)


@functools.lru_cache(maxsize=4)
def load_checkpoint_sizes(root: Path = DATA_DIR) -> CheckpointSizes:
    return load_model(root / FILE, CheckpointSizes, root)
