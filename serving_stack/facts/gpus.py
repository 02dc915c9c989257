"""GPU types as data (`catalog/gpus.yaml`): the product label GPU Feature Discovery reports, memory, host arch.

Node pools and serving targets meet here: a pool says which GPU its nodes hold, a recipe pins its workers
to a product label. A label no entry knows is a new GPU: `gpu_of_product` answers None and the plan
turns that into a config error that says to add the GPU here.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.errors import ConfigError
from serving_stack.facts.data import DATA_DIR, Data, load_model

Arch = Literal["x86_64", "arm64"]
GPUS_FILE = "gpus.yaml"


class Gpu(Data):
    productLabel: str = pydantic.Field(pattern=r"^NVIDIA-[A-Za-z0-9.-]+$")
    alternativeProductLabels: tuple[str, ...] = ()
    memoryGB: int = pydantic.Field(gt=0)
    arch: Optional[Arch] = None

    @property
    def product_labels(self) -> list[str]:
        return [self.productLabel, *self.alternativeProductLabels]


class GpusFile(Data):
    schemaVersion: Literal[1]
    gpus: dict[str, Gpu] = pydantic.Field(min_length=1)


def gpu_of_product(gpus: dict[str, Gpu], product_label: str) -> Optional[str]:
    """`NVIDIA-H200` -> `h200` (the GPU whose known product labels include it), None for an unknown label."""
    return next((name for name, gpu in gpus.items() if product_label in gpu.product_labels), None)


def unknown_gpu_problem(product_label: str) -> str:
    """What to do about a product label no GPU entry knows (one wording for the plan and the absorb report)."""
    return (
        f"GPU product {product_label!r} is in no entry of catalog/{GPUS_FILE}: add the GPU there (productLabel, "
        "memoryGB, arch) and a node pool (or nodeFacts) that has it"
    )


@functools.lru_cache(maxsize=4)
def load_gpus(root: Path = DATA_DIR) -> dict[str, Gpu]:
    data = load_model(root / GPUS_FILE, GpusFile, root)
    owners: dict[str, str] = {}
    for name, gpu in data.gpus.items():
        for label in gpu.product_labels:
            if label in owners:
                raise ConfigError(
                    f"catalog/{GPUS_FILE}: gpus.{name}", f"product label {label!r} is also {owners[label]}'s"
                )
            owners[label] = name
    return dict(data.gpus)
