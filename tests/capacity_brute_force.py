"""Reference oracle for the capacity planner: exhaustive enumeration of the same search space.

Every target is either left out or placed on one of its eligible pools with 1..max replica sets; a
branch stops once the demand is covered (adding more can only add cost) or once its node cost is
already above the best found (node cost never falls as replica sets are added). Costs are computed
here from scratch (ceil per pool) and share no code with the planner's solver.
"""

from __future__ import annotations

import math
from typing import Optional

from tools.plan_capacity.model import SearchSpace


def brute_force_cost(space: SearchSpace) -> Optional[float]:
    """The minimum $/h over every plan in `space`, or None when no plan is feasible."""
    rows = list(space.rows)
    choices = [
        [(pool, sets) for pool in space.eligible_pools(row) for sets in range(1, space.max_replica_sets(row) + 1)]
        for row in rows
    ]
    best = math.inf

    def cost(used: dict) -> float:
        return sum(pool.usd_per_node_hour * math.ceil(gpus / pool.gpus_per_node) for pool, gpus in used.items())

    def visit(index: int, covered: float, used: dict, targets: int) -> None:
        nonlocal best
        current = cost(used)
        if current > best:
            return
        if covered >= space.demand - 1e-9:
            if space.budget_usd_per_hour is None or current <= space.budget_usd_per_hour + 1e-9:
                best = min(best, current)
            return
        if index == len(rows):
            return
        visit(index + 1, covered, used, targets)
        if space.max_targets is not None and targets >= space.max_targets:
            return
        row = rows[index]
        for pool, sets in choices[index]:
            placed = dict(used)
            placed[pool] = placed.get(pool, 0) + sets * row.gpus_per_replica_set
            visit(index + 1, covered + sets * space.capacity[row.target_id], placed, targets + 1)

    visit(0, 0.0, {}, 0)
    return None if best == math.inf else best
