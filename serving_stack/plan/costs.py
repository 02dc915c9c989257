"""What the GPU pools cost: one row per pool at list prices (the outputs' `nodePools`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Optional

from serving_stack.plan.pools import ResolvedPool


@dataclass(frozen=True)
class PoolCostRow:
    """Capacity and list-price cost of one pool. Prices are on-demand list prices (an upper bound for
    spot, an estimate for Capacity Blocks); None where the instance facts publish no price."""

    pool: str
    instanceType: Optional[str]
    capacityType: str
    gpusPerNode: int
    nodes: str
    gpus: str
    usdPerHourDesired: Optional[float]
    usdPerHourMin: Optional[float]
    usdPerHourMax: Optional[float]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _usd(price: Optional[float], nodes: int) -> Optional[float]:
    return round(price * nodes, 2) if price is not None else None


def pool_cost_rows(pools: Iterable[ResolvedPool]) -> list[PoolCostRow]:
    """One row per pool: `nodes`/`gpus` as `min..max` ranges, hourly cost at desired, min and max nodes."""
    return [
        PoolCostRow(
            pool=pool.name,
            instanceType=pool.instance_type,
            capacityType=pool.capacity_type,
            gpusPerNode=pool.gpus_per_node,
            nodes=f"{pool.min_size}..{pool.max_size}",
            gpus=f"{pool.min_size * pool.gpus_per_node}..{pool.max_size * pool.gpus_per_node}",
            usdPerHourDesired=_usd(pool.on_demand_usd_per_hour, pool.desired_size),
            usdPerHourMin=_usd(pool.on_demand_usd_per_hour, pool.min_size),
            usdPerHourMax=_usd(pool.on_demand_usd_per_hour, pool.max_size),
        )
        for pool in pools
    ]
