"""Dated facts: EKS's support calendar (`catalog/eks_versions.yaml`) and today's date, the one input that
makes a pin age. Today comes from `NEMOTRON_TODAY` (YYYY-MM-DD; the render's `--today` sets it, tests
inject it) or the clock."""

from __future__ import annotations

import datetime
import functools
import os
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.aws import KubernetesMinor, version_key
from serving_stack.facts.strict_files import DATA_DIR, Data, load_model

TODAY_ENV = "NEMOTRON_TODAY"


class VersionDates(Data):
    """One row of EKS's calendar. `sourcing`: primary when read from AWS's own calendar (the file's `source`),
    secondary when only copies of it were read (`source` names them)."""

    released: datetime.date
    endOfStandardSupport: datetime.date
    endOfExtendedSupport: datetime.date
    sourcing: Literal["primary", "secondary"]
    source: Optional[str] = pydantic.Field(default=None, min_length=1)

    @pydantic.model_validator(mode="after")
    def _in_order(self) -> VersionDates:
        if not self.released < self.endOfStandardSupport < self.endOfExtendedSupport:
            raise ValueError("released < endOfStandardSupport < endOfExtendedSupport")
        if self.sourcing == "secondary" and self.source is None:
            raise ValueError("a secondary row names the sources it was read from (source)")
        return self


class EksVersionsFile(Data):
    schemaVersion: Literal[1]
    source: str = pydantic.Field(min_length=1)
    read: Optional[datetime.date]
    warnDays: int = pydantic.Field(ge=1, le=365)
    listDays: int = pydantic.Field(ge=1, le=365)
    versions: dict[KubernetesMinor, VersionDates] = pydantic.Field(min_length=1)

    def newest_in_standard_support(self, today: datetime.date) -> Optional[str]:
        supported = [v for v, dates in self.versions.items() if dates.released <= today < dates.endOfStandardSupport]
        return max(supported, key=version_key) if supported else None

    def provenance(self) -> str:
        read = f"read {self.read.isoformat()}" if self.read else "dates not re-read"
        secondary = [v for v, dates in self.versions.items() if dates.sourcing == "secondary"]
        return f"{self.source}, {read}" + (f"; secondary sources only for {', '.join(secondary)}" if secondary else "")


@functools.lru_cache(maxsize=4)
def load_eks_versions(root: Path = DATA_DIR) -> EksVersionsFile:
    return load_model(root / "eks_versions.yaml", EksVersionsFile, root)


def today() -> datetime.date:
    """`NEMOTRON_TODAY` when set (a bad value names it), else the clock's date."""
    text = os.environ.get(TODAY_ENV)
    if not text:
        return datetime.date.today()
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise ConfigError(TODAY_ENV, f"{bounded(text)} is not a date", "YYYY-MM-DD") from None
