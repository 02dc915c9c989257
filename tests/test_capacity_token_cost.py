"""$/1M output tokens against hand computation: a whole node's price over a whole node's tokens (a
different path from the planner's replica-set share), and, within rounding, the replica set's measured
concurrency x tok/s/user instead of the published tok/s per GPU."""

from __future__ import annotations

import math

from capacity_demands import CRITERIA, OFFERS, ROWS

from serving_stack.plan.throughput import token_cost_row
from tools.plan_capacity.model import token_cost_markdown

TABLE = {row.target_id: token_cost_row(row, OFFERS, CRITERIA) for row in ROWS}


def _three_targets_on_different_gpus() -> list:
    priced = {o.gpu for o in OFFERS if o.usd_per_hour.get("on-demand")}
    chosen: dict[str, object] = {}
    for row in ROWS:
        if row.gpu in priced and row.published and row.gpu not in chosen:
            chosen[row.gpu] = row
    assert len(chosen) >= 3, "the catalog must price at least three GPU types"
    return list(chosen.values())[:3]


def test_cost_per_million_matches_a_whole_node_computation() -> None:
    for row in _three_targets_on_different_gpus():
        for capacity_type in ("on-demand", "capacity-block"):
            offers = [o for o in OFFERS if o.gpu == row.gpu and o.usd_per_hour.get(capacity_type)]
            cell = TABLE[row.target_id].by_capacity_type[capacity_type]
            if not offers:
                assert cell is None
                continue
            node_costs = {
                o.instance_type: o.usd_per_hour[capacity_type]
                / (row.output_tokens_per_second_per_gpu * o.gpus_per_node * 3600 / 1e6)
                for o in offers
            }
            assert cell is not None and math.isclose(cell.usd_per_million, min(node_costs.values()), rel_tol=1e-12)
            assert math.isclose(node_costs[cell.instance_type], cell.usd_per_million, rel_tol=1e-12)
            measured_tokens = row.concurrency * row.tokens_per_second_per_user  # tok/s of one replica set
            offer = next(o for o in offers if o.instance_type == cell.instance_type)
            share = offer.usd_per_hour[capacity_type] * row.gpus_per_replica_set / offer.gpus_per_node
            assert math.isclose(share / (measured_tokens * 3600) * 1e6, cell.usd_per_million, rel_tol=0.01)


def test_unpriced_capacity_is_na_and_criteria_follow_the_catalog() -> None:
    for row in ROWS:
        priced = {c for o in OFFERS if o.gpu == row.gpu for c, p in o.usd_per_hour.items() if p}
        for capacity_type, cell in TABLE[row.target_id].by_capacity_type.items():
            assert (cell is not None) == (capacity_type in priced), (row.target_id, capacity_type)
        passes = (
            row.tokens_per_second_per_user >= CRITERIA.min_tokens_per_second_per_user
            and row.ttft_p50_ms <= CRITERIA.max_ttft_p50_ms
        )
        assert TABLE[row.target_id].meets_criteria == passes
    markdown = token_cost_markdown(list(TABLE.values()))
    assert markdown.count("\n") == len(ROWS) + 1 and all(f"`{row.target_id}`" in markdown for row in ROWS)
