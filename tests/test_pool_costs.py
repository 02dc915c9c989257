"""Pool rows for stack outputs and summary.md: instance type, the pool's sizes as numbers, and hourly
list-price cost at desired, min and max nodes (n/a where no price is published)."""

from __future__ import annotations

from aws_helpers import eks_config, node_pool
from plan_helpers import plan_of

from tools.summary import pool_cost_markdown

CB = {"capacityType": "capacity-block", "capacityReservationId": "cr-0123456789abcdef0", "kubernetesVersion": "1.33"}


def rows():
    plan = plan_of(
        eks_config(
            [
                node_pool("h200", "p5en.48xlarge", minSize=1, desiredSize=2, maxSize=4),
                node_pool("b200", "p6-b200.48xlarge", desiredSize=1, maxSize=1),
                node_pool("gb200", "p6e-gb200.36xlarge", desiredSize=2, maxSize=2, **CB),
            ],
            [],
        )
    )
    return {row.pool: row for row in plan.pool_costs}


def test_sizes_and_costs():
    by_pool = rows()
    h200 = by_pool["h200"]
    assert (h200.instanceType, h200.capacityType, h200.gpusPerNode) == ("p5en.48xlarge", "on-demand", 8)
    assert (h200.minSize, h200.desiredSize, h200.maxSize) == (1, 2, 4)
    assert (h200.usdPerHour, h200.usdPerHourMin, h200.usdPerHourMax) == (126.59, 63.3, 253.18)
    b200 = by_pool["b200"]
    assert (b200.minSize, b200.usdPerHour, b200.usdPerHourMin, b200.usdPerHourMax) == (0, 113.93, 0.0, 113.93)


def test_unpublished_price_is_none_not_zero():
    gb200 = rows()["gb200"]
    assert (gb200.maxSize, gb200.capacityType) == (2, "capacity-block")
    assert (gb200.usdPerHour, gb200.usdPerHourMin, gb200.usdPerHourMax) == (None, None, None)


def test_rows_serialize_for_stack_outputs_with_numbers():
    assert rows()["h200"].model_dump(mode="json") == {
        "pool": "h200",
        "instanceType": "p5en.48xlarge",
        "capacityType": "on-demand",
        "gpusPerNode": 8,
        "minSize": 1,
        "desiredSize": 2,
        "maxSize": 4,
        "usdPerHour": 126.59,
        "usdPerHourMin": 63.3,
        "usdPerHourMax": 253.18,
    }


def test_markdown_table():
    table = pool_cost_markdown(list(rows().values())).splitlines()
    assert table[0].startswith("| pool | instance type |")
    assert "| `h200` | p5en.48xlarge | on-demand | 1..4 | 8..32 | $126.59 | $63.30..$253.18 |" in table
    assert "| `gb200` | p6e-gb200.36xlarge | capacity-block | 0..2 | 0..8 | n/a | n/a..n/a |" in table
