"""Facts the capacity planner needs, as plain planner rows: one `CandidateRow` per catalog target (GPUs
and replica set from its manifest, figures from `targets.yaml`) and one `InstanceOffer` per instance
type (GPUs per node, on-demand price from `instance_types.yaml`, Capacity Block price from
`capacity_prices.yaml` where a source publishes one)."""

from __future__ import annotations

import datetime
import functools
from pathlib import Path
from typing import Literal

import pydantic

from serving_stack.facts.catalog import CATALOG_DIR
from serving_stack.facts.data import Data, load_model


class SourcedPrice(Data):
    usdPerHour: float = pydantic.Field(gt=0)
    region: str
    asOf: str
    reviewBy: datetime.date = pydantic.Field(description="the day the price is stale: re-read the source")
    source: str = pydantic.Field(min_length=20)


class CapacityPricesFile(Data):
    schemaVersion: Literal[1]
    capacityBlock: dict[str, SourcedPrice] = pydantic.Field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def load_capacity_prices(root: Path = CATALOG_DIR) -> CapacityPricesFile:
    return load_model(root / "capacity_prices.yaml", CapacityPricesFile, root)
