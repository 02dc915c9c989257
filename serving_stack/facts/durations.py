"""The one table of step durations (`catalog/durations.yaml`): how long each step of a cold start takes, with
its kind (measured / derived / estimate), its source and the date that source was read.

Every model of time reads this table: the rollout model's first-`up` timeline and critical paths, the new
GPU node path and the SageMaker path (`tools/rollout`), and the SageMaker wait budget (`Facts`). A figure
is defined here once; a duplicate key is refused by the strict reader and tests/test_durations_table.py
fails on a second definition anywhere else.
"""

from __future__ import annotations

import datetime
import functools
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.facts.strict_files import DATA_DIR, Data, load_model

Kind = Literal["measured", "derived", "estimate"]
GoalName = Literal["first-dynamo-token", "new-gpu-node", "sagemaker-first-token"]
PullMode = Literal["plain", "parallel"]
UNLISTED_IMAGE = "unlisted"


class Sourced(Data):
    """What a figure rests on. An estimate says so at the start of its source, and only an estimate does."""

    kind: Kind
    source: str = pydantic.Field(min_length=10)
    read: datetime.date

    @pydantic.model_validator(mode="after")
    def _estimate_says_so(self) -> Sourced:
        if self.source.startswith("estimate") != (self.kind == "estimate"):
            raise ValueError("kind estimate, and only it, starts its source with 'estimate'")
        return self


class Step(Sourced):
    """A step's duration, typical and worst case (seconds)."""

    seconds: float = pydantic.Field(ge=0)
    worstSeconds: Optional[float] = pydantic.Field(default=None, ge=0)

    @property
    def worst(self) -> float:
        return self.seconds if self.worstSeconds is None else self.worstSeconds

    @pydantic.model_validator(mode="after")
    def _worst_is_not_shorter(self) -> Step:
        if self.worst < self.seconds:
            raise ValueError("worstSeconds is at least seconds")
        return self


class PullRate(Sourced):
    """Seconds to pull, unpack and start an image, per GB of image on disk (unpacked)."""

    secondsPerGB: float = pydantic.Field(gt=0)
    worstSecondsPerGB: float = pydantic.Field(gt=0)

    @pydantic.model_validator(mode="after")
    def _worst_is_not_faster(self) -> PullRate:
        if self.worstSecondsPerGB < self.secondsPerGB:
            raise ValueError("worstSecondsPerGB is at least secondsPerGB")
        return self


class Rate(Sourced):
    """A transfer rate (MB/s, 10^6 bytes), typical and worst case."""

    mbPerSecond: float = pydantic.Field(gt=0)
    worstMbPerSecond: Optional[float] = pydantic.Field(default=None, gt=0)

    @property
    def worst(self) -> float:
        return self.mbPerSecond if self.worstMbPerSecond is None else self.worstMbPerSecond

    @pydantic.model_validator(mode="after")
    def _worst_is_not_faster(self) -> Rate:
        if self.worst > self.mbPerSecond:
            raise ValueError("worstMbPerSecond is at most mbPerSecond")
        return self


class ImageSize(Sourced):
    unpackedGB: float = pydantic.Field(gt=0)


class Goal(Data):
    minutes: float = pydantic.Field(gt=0)
    source: str = pydantic.Field(min_length=10)


class Durations(Data):
    schemaVersion: Literal[1]
    steps: dict[str, Step]
    imagePull: dict[PullMode, PullRate]
    rates: dict[str, Rate]
    images: dict[str, ImageSize]
    goals: dict[GoalName, Goal]

    @pydantic.model_validator(mode="after")
    def _complete(self) -> Durations:
        missing = [m for m in PullMode.__args__ if m not in self.imagePull]  # type: ignore[attr-defined]
        missing += [g for g in GoalName.__args__ if g not in self.goals]  # type: ignore[attr-defined]
        if UNLISTED_IMAGE not in self.images:
            missing.append(f"images.{UNLISTED_IMAGE}")
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        return self

    def image(self, reference: str) -> tuple[str, ImageSize]:
        """The size entry of an image reference (`repo:tag`, `repo@sha256:...`): the longest listed
        repository it starts with, else `unlisted`."""
        matches = [
            repo
            for repo in self.images
            if repo != UNLISTED_IMAGE and (reference == repo or reference.startswith((repo + ":", repo + "@")))
        ]
        name = max(matches, key=len, default=UNLISTED_IMAGE)
        return name, self.images[name]


@functools.lru_cache(maxsize=4)
def load_durations(root: Path = DATA_DIR) -> Durations:
    return load_model(root / "durations.yaml", Durations, root)
