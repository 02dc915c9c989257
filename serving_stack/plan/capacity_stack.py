"""A capacity plan as the stack config it implies: the `targets:` list and the `aws.nodePools` entries,
as plain data in the config's own shape (what `targets: auto` expands to)."""

from __future__ import annotations

from typing import Any, Optional

from serving_stack.plan.capacity import Plan
from serving_stack.plan.capacity_model import CandidateRow, Pool


def pool_name(pool: Pool) -> str:
    """A DNS label naming the instance type and how it is bought, e.g. `p5en-48xlarge-on-demand`."""
    return f"{pool.instance_type.replace('.', '-')}-{pool.capacity_type}"


def plan_to_stack_config(
    plan: Plan,
    rows: dict[str, CandidateRow],
    *,
    availability_zone: Optional[str] = None,
    scale_to_zero: bool = False,
    extra_max_nodes: int = 0,
) -> dict[str, Any]:
    """`targets` with each worker component at replica sets x its published replicas, pinned to its pool;
    `nodePools` sized to the plan (`minSize` 0 with `scale_to_zero`, `maxSize` + `extra_max_nodes` for
    the autoscalers' room to grow)."""
    targets = [
        {
            "id": placement.target_id,
            "replicas": {
                name: count * placement.replica_sets
                for name, count in sorted(rows[placement.target_id].worker_replicas.items())
            },
            "nodePool": pool_name(placement.pool),
        }
        for placement in plan.placements
    ]
    node_pools = []
    for use in plan.pools:
        entry: dict[str, Any] = {
            "name": pool_name(use.pool),
            "instanceType": use.pool.instance_type,
            "capacityType": use.pool.capacity_type,
            "minSize": 0 if scale_to_zero else use.nodes,
            "desiredSize": use.nodes,
            "maxSize": use.nodes + extra_max_nodes,
        }
        if availability_zone:
            entry["availabilityZone"] = availability_zone
        node_pools.append(entry)
    return {"targets": targets, "nodePools": node_pools}
