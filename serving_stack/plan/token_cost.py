"""What a million output tokens costs on each target: the replica set's share of its node's price per
hour over the tokens it produces per hour at the published throughput.

    $/1M = (node $/h x GPUs per replica set / GPUs per node) / (output tok/s per GPU x GPUs per replica set x 3600) x 1e6

It assumes the replica set runs at its published concurrency the whole hour (a floor on the real
price: idle capacity and headroom cost the same per hour and produce nothing). For each capacity type
the cheapest instance type of the target's GPU is used; a capacity type without a sourced price is n/a.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from serving_stack.plan.capacity_model import CAPACITY_TYPES, CandidateRow, InstanceOffer, Slo, meets_slo

SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 1_000_000


@dataclass(frozen=True)
class TokenCost:
    usd_per_million: float
    instance_type: str


@dataclass(frozen=True)
class TokenCostRow:
    target_id: str
    gpu: str
    gpus_per_replica_set: int
    output_tokens_per_second: Optional[float]  # of one replica set
    meets_criteria: Optional[bool]
    by_capacity_type: Mapping[str, Optional[TokenCost]]


def usd_per_million_output_tokens(row: CandidateRow, offer: InstanceOffer, capacity_type: str) -> Optional[float]:
    price = offer.usd_per_hour.get(capacity_type)
    if price is None or row.output_tokens_per_second_per_gpu is None or offer.gpu != row.gpu:
        return None
    share_usd_per_hour = price * row.gpus_per_replica_set / offer.gpus_per_node
    tokens_per_hour = row.output_tokens_per_second_per_gpu * row.gpus_per_replica_set * SECONDS_PER_HOUR
    return share_usd_per_hour / tokens_per_hour * TOKENS_PER_MILLION


def token_cost_rows(
    rows: tuple[CandidateRow, ...], offers: tuple[InstanceOffer, ...], criteria: Slo
) -> list[TokenCostRow]:
    table = []
    for row in rows:
        by_type: dict[str, Optional[TokenCost]] = {}
        for capacity_type in CAPACITY_TYPES:
            costs = [
                (cost, offer.instance_type)
                for offer in offers
                if (cost := usd_per_million_output_tokens(row, offer, capacity_type)) is not None
            ]
            by_type[capacity_type] = TokenCost(*min(costs)) if costs else None
        table.append(
            TokenCostRow(
                target_id=row.target_id,
                gpu=row.gpu,
                gpus_per_replica_set=row.gpus_per_replica_set,
                output_tokens_per_second=(
                    row.output_tokens_per_second_per_gpu * row.gpus_per_replica_set
                    if row.output_tokens_per_second_per_gpu is not None
                    else None
                ),
                meets_criteria=meets_slo(row, criteria) if row.published else None,
                by_capacity_type=by_type,
            )
        )
    return table


def _cell(cost: Optional[TokenCost]) -> str:
    return f"${cost.usd_per_million:.3f} ({cost.instance_type})" if cost else "n/a"


def token_cost_markdown(table: list[TokenCostRow]) -> str:
    """The rows as a `summary.md` table, cheapest on-demand first (n/a last)."""
    ordered = sorted(
        table,
        key=lambda r: (
            r.by_capacity_type["on-demand"] is None,
            r.by_capacity_type["on-demand"].usd_per_million if r.by_capacity_type["on-demand"] else 0,
            r.target_id,
        ),
    )
    lines = [
        "| target | GPU | GPUs / replica set | output tok/s / replica set | $/1M output tokens, on-demand | "
        "$/1M, capacity block | $/1M, spot | meets criteria |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in ordered:
        throughput = f"{r.output_tokens_per_second:,.0f}" if r.output_tokens_per_second is not None else "n/a"
        meets = {True: "yes", False: "no", None: "n/a"}[r.meets_criteria]
        lines.append(
            f"| `{r.target_id}` | {r.gpu} | {r.gpus_per_replica_set} | {throughput} | "
            f"{_cell(r.by_capacity_type['on-demand'])} | {_cell(r.by_capacity_type['capacity-block'])} | "
            f"{_cell(r.by_capacity_type['spot'])} | {meets} |"
        )
    return "\n".join(lines)
