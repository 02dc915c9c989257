"""Facts the capacity planner needs, as plain planner rows: one `CandidateRow` per catalog target (GPUs
and replica set from its manifest, figures from `targets.yaml`) and one `InstanceOffer` per instance
type (GPUs per node, on-demand price from `instance_types.yaml`, Capacity Block price from
`capacity_prices.yaml` where a source publishes one)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

import pydantic
import yaml

from serving_stack.errors import from_validation_error
from serving_stack.facts.catalog import CATALOG_DIR


class _Data(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class SourcedPrice(_Data):
    usdPerHour: float = pydantic.Field(gt=0)
    region: str
    asOf: str
    source: str = pydantic.Field(min_length=20)


class CapacityPricesFile(_Data):
    schemaVersion: Literal[1]
    capacityBlock: dict[str, SourcedPrice] = {}


@functools.lru_cache(maxsize=4)
def load_capacity_prices(root: Path = CATALOG_DIR) -> CapacityPricesFile:
    path = root / "capacity_prices.yaml"
    try:
        return CapacityPricesFile.model_validate(yaml.safe_load(path.read_text()))
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, CapacityPricesFile, prefix="catalog/capacity_prices.yaml: ") from None
