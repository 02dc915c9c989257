"""The $/h side of two renders of one stack: each GPU pool and SageMaker endpoint priced from the stack's
outputs (`nodePools[].usdPerHour`, `endpoints[].usdPerHour`), base beside head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.pr_diff.records import Render


@dataclass(frozen=True)
class Cost:
    detail: str
    usd_per_hour: float | None


@dataclass(frozen=True)
class CostLine:
    item: str
    base: Cost | None
    head: Cost | None


def _costs(outputs: dict[str, Any]) -> dict[str, Cost]:
    costs = {}
    for pool in outputs.get("nodePools") or []:
        costs[f"GPU pool `{pool['pool']}`"] = Cost(
            f"{pool['instanceType']} x{pool.get('desiredSize')}", pool.get("usdPerHour")
        )
    for endpoint in outputs.get("endpoints") or []:
        if endpoint.get("kind") == "sagemaker":
            costs[f"SageMaker `{endpoint['id']}`"] = Cost(
                f"{endpoint.get('instanceType')} x{endpoint.get('instanceCount')}", endpoint.get("usdPerHour")
            )
    return costs


def diff_costs(base: Render, head: Render) -> list[CostLine]:
    old, new = _costs(base.outputs), _costs(head.outputs)
    return [CostLine(item, old.get(item), new.get(item)) for item in sorted(old.keys() | new.keys())]
