"""Size the serving stack from demand: the targets, replica sets and node pools that meet the demand at
the lowest $/h, from the catalog's measured rows and the instance facts.

Why an integer program: the cost is a sum of per-pool node counts, each the ceiling of the GPUs placed
on that pool, so packing matters (a 1-GPU replica set on an 8-GPU node pays for 8) and a greedy pick by
$/GPU or users/$ is not optimal (a mix of an 8-GPU node and a 1-GPU node can beat two 8-GPU nodes). The
search space (`SearchSpace`) is solved exactly with HiGHS, a branch-and-bound MILP solver, with zero
optimality gap; `tests/test_capacity_planner.py` checks it against brute-force enumeration.

Ties on $/h are broken towards fewer distinct targets (one endpoint is simpler to run), then fewer GPUs
(the spare GPUs on paid nodes stay free for autoscaling and are reported as headroom), then more
capacity (the faster target at the same price).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import highspy

from serving_stack.plan.throughput import CandidateRow
from tools.plan_capacity.model import Pool, SearchSpace

COST_TIE_TOLERANCE = 1e-6  # $/h: plans closer than this cost the same


@dataclass(frozen=True)
class Placement:
    target_id: str
    pool: Pool
    replica_sets: int
    gpus: int
    capacity: float  # in the demand's unit (users or requests/s)


@dataclass(frozen=True)
class PoolUse:
    pool: Pool
    nodes: int
    gpus_used: int

    @property
    def gpus(self) -> int:
        return self.nodes * self.pool.gpus_per_node

    @property
    def spare_gpus(self) -> int:
        return self.gpus - self.gpus_used

    @property
    def usd_per_hour(self) -> float:
        return self.nodes * self.pool.usd_per_node_hour


@dataclass(frozen=True)
class Plan:
    placements: tuple[Placement, ...]
    pools: tuple[PoolUse, ...]
    demand: float
    unit: str

    @property
    def usd_per_hour(self) -> float:
        return sum(p.usd_per_hour for p in self.pools)

    @property
    def capacity(self) -> float:
        return sum(p.capacity for p in self.placements)

    @property
    def headroom(self) -> float:
        """Capacity beyond the demand, as a fraction of the demand (0.2 = 20% spare)."""
        return self.capacity / self.demand - 1.0 if self.demand else math.inf

    @property
    def gpus_used(self) -> int:
        return sum(p.gpus for p in self.placements)

    @property
    def spare_gpus(self) -> int:
        return sum(p.spare_gpus for p in self.pools)

    @property
    def free_capacity(self) -> float:
        """What the spare GPUs of the paid nodes could serve with more replica sets of the targets already
        on each pool (the densest that fits): autoscaling room at no extra $/h."""
        room = 0.0
        for use in self.pools:
            fits = [
                (p.capacity / p.replica_sets, p.gpus // p.replica_sets) for p in self.placements if p.pool == use.pool
            ]
            room += max((per_set * (use.spare_gpus // gpus) for per_set, gpus in fits if gpus), default=0.0)
        return room

    @property
    def target_ids(self) -> tuple[str, ...]:
        return tuple(p.target_id for p in self.placements)


def build_plan(
    space: SearchSpace, rows: dict[str, CandidateRow], assignment: dict[tuple[str, Pool], int], unit: str
) -> Plan:
    """A plan from `(target id, pool) -> replica sets`; pools get the fewest nodes that hold their GPUs."""
    placements = tuple(
        Placement(target_id, pool, sets, sets * rows[target_id].gpus_per_replica_set, sets * space.capacity[target_id])
        for (target_id, pool), sets in sorted(assignment.items(), key=lambda item: (item[0][1], item[0][0]))
        if sets > 0
    )
    used: dict[Pool, int] = {}
    for placement in placements:
        used[placement.pool] = used.get(placement.pool, 0) + placement.gpus
    pools = tuple(PoolUse(pool, math.ceil(gpus / pool.gpus_per_node), gpus) for pool, gpus in sorted(used.items()))
    return Plan(placements, pools, space.demand, unit)


def solve(space: SearchSpace, unit: str) -> Optional[Plan]:
    """The cheapest plan in `space` (None when none is feasible), ties broken as the module says."""
    if not space.rows or space.demand <= 0:
        return None
    highs = highspy.Highs()
    highs.silent()
    for option, value in (("mip_rel_gap", 0.0), ("mip_abs_gap", 1e-9), ("threads", 1), ("random_seed", 0)):
        highs.setOptionValue(option, value)
    sets, placed = {}, {}
    for row in space.rows:
        for pool in space.eligible_pools(row):
            sets[row.target_id, pool] = highs.addIntegral(lb=0, ub=space.max_replica_sets(row))
            placed[row.target_id, pool] = highs.addBinary()
            highs.addConstr(sets[row.target_id, pool] - space.max_replica_sets(row) * placed[row.target_id, pool] <= 0)
        highs.addConstr(highs.qsum(placed[key] for key in placed if key[0] == row.target_id) <= 1)
    gpus_per_set = {row.target_id: row.gpus_per_replica_set for row in space.rows}
    nodes = {}
    for pool in space.pools:
        on_pool = [(key, var) for key, var in sets.items() if key[1] == pool]
        most = sum(
            space.max_replica_sets(r) * r.gpus_per_replica_set for r in space.rows if (r.target_id, pool) in sets
        )
        nodes[pool] = highs.addIntegral(lb=0, ub=math.ceil(most / pool.gpus_per_node))
        gpus = highs.qsum(gpus_per_set[key[0]] * var for key, var in on_pool)
        highs.addConstr(gpus - pool.gpus_per_node * nodes[pool] <= 0)
    highs.addConstr(highs.qsum(space.capacity[key[0]] * var for key, var in sets.items()) >= space.demand)
    cost = highs.qsum(pool.usd_per_node_hour * var for pool, var in nodes.items())
    if space.budget_usd_per_hour is not None:
        highs.addConstr(cost <= space.budget_usd_per_hour)
    if space.max_targets is not None:
        highs.addConstr(highs.qsum(placed.values()) <= space.max_targets)
    highs.minimize(cost)
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    cheapest = highs.getInfo().objective_function_value
    highs.addConstr(cost <= cheapest + COST_TIE_TOLERANCE)
    all_gpus = sum(space.max_replica_sets(r) * r.gpus_per_replica_set for r in space.rows) + 1
    most_capacity = sum(space.max_replica_sets(r) * space.capacity[r.target_id] for r in space.rows) + 1
    used_gpus = highs.qsum(gpus_per_set[key[0]] * var for key, var in sets.items())
    capacity = highs.qsum(
        space.capacity[key[0]] / most_capacity * var for key, var in sets.items()
    )  # < 1: below one GPU
    highs.minimize(all_gpus * highs.qsum(placed.values()) + used_gpus - capacity)
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError("HiGHS lost the optimum while breaking ties")  # cannot happen: stage 1's optimum is feasible
    assignment = {key: round(highs.val(var)) for key, var in sets.items()}
    return build_plan(space, {r.target_id: r for r in space.rows}, assignment, unit)
