"""The $/h of each GPU pool and SageMaker endpoint in two renders' outputs, base beside head, and the totals.

The outputs are read by their contract's major version (`serving_stack/contract/CHANGELOG.md`: 1.x named
the prices `usdPerHourDesired` and `costPerHourUsd`), so a base rendered before a major change still diffs.

A price the data does not know (null in the outputs) makes its side's total unknown, and the change of its
item unknown unless the item is the same on both sides: a total of the priced items only would read as a
saving when a priced pool becomes an unpriced one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.contract.outputs import CONTRACT_VERSION
from tools.pr_diff.records import Render


@dataclass(frozen=True)
class Cost:
    detail: str
    usd_per_hour: Optional[float]


@dataclass(frozen=True)
class CostLine:
    item: str
    base: Optional[Cost]
    head: Optional[Cost]

    @property
    def change(self) -> Optional[float]:
        """Head minus base (an absent side costs nothing, an unchanged item nothing, priced or not); None
        when a side that exists has no price."""
        if self.base == self.head:
            return 0.0
        before = self.base.usd_per_hour if self.base else 0.0
        after = self.head.usd_per_hour if self.head else 0.0
        return None if before is None or after is None else after - before


@dataclass(frozen=True)
class CostChange:
    """The stack's $/h before and after; a total is None when any of its items has no price, the change
    when any item's change is unknown."""

    lines: tuple[CostLine, ...]

    def total(self, side: str) -> Optional[float]:
        prices = [cost.usd_per_hour for line in self.lines if (cost := getattr(line, side)) is not None]
        known = [price for price in prices if price is not None]
        return round(sum(known), 2) if len(known) == len(prices) else None

    @property
    def change(self) -> Optional[float]:
        """The sum of the items' changes; None when any is unknown."""
        changes = [line.change for line in self.lines]
        known = [change for change in changes if change is not None]
        return round(sum(known), 2) if len(known) == len(changes) else None

    def priced_total(self, side: str) -> float:
        """The sum of the priced items of a side (what the percentage is of while an unpriced item stays)."""
        return round(sum(cost.usd_per_hour or 0.0 for line in self.lines if (cost := getattr(line, side))), 2)

    @property
    def percent(self) -> Optional[float]:
        """The change as a share of the base's priced items (all of it when every item is priced); None when
        the change is unknown or the base costs nothing."""
        if self.change is None or not self.priced_total("base"):
            return None
        return 100 * self.change / self.priced_total("base")

    def unpriced(self, side: str) -> list[CostLine]:
        return [line for line in self.lines if (cost := getattr(line, side)) is not None and cost.usd_per_hour is None]


def _costs(outputs: dict[str, Any]) -> dict[str, Cost]:
    major = str(outputs.get("contractVersion", CONTRACT_VERSION)).partition(".")[0]
    endpoint_price = "costPerHourUsd" if major == "1" else "usdPerHour"
    costs = {}
    for pool in outputs.get("nodePools") or []:
        costs[f"GPU pool `{pool['pool']}`"] = (
            Cost(f"{pool['instanceType']}, nodes {pool['nodes']}", pool.get("usdPerHourDesired"))
            if major == "1"
            else Cost(f"{pool['instanceType']} x{pool['desiredSize']}", pool.get("usdPerHour"))
        )
    for endpoint in outputs.get("endpoints") or []:
        if endpoint.get("kind") == "sagemaker":
            costs[f"SageMaker `{endpoint['id']}`"] = Cost(
                f"{endpoint.get('instanceType')} x{endpoint.get('instanceCount')}", endpoint.get(endpoint_price)
            )
    return costs


def diff_costs(base: Render, head: Render) -> CostChange:
    old, new = _costs(base.outputs), _costs(head.outputs)
    return CostChange(tuple(CostLine(item, old.get(item), new.get(item)) for item in sorted(old.keys() | new.keys())))
