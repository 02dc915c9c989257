"""The capacity planner is optimal on its search space: for seeded demands drawn from the catalog data
it finds the same $/h as exhaustive enumeration, and an infeasible demand names exactly the constraints
whose relaxation alone makes the brute force find a plan."""

from __future__ import annotations

import math

import pytest
from capacity_brute_force import brute_force_cost
from capacity_demands import CRITERIA, OFFERS, ROWS, generated_demands

from serving_stack.config.demand import DemandConfig, SloConfig
from serving_stack.plan.throughput import Slo
from tools.plan_capacity.explain import active_constraints, plan_capacity, relaxed_demand
from tools.plan_capacity.model import amount, demand_of, search_space, unit
from tools.plan_capacity.solver import solve

DEMANDS = list(generated_demands(count=60, seed=17))
CRITERIA_SLO = SloConfig(
    minTokensPerSecondPerUser=CRITERIA.min_tokens_per_second_per_user, maxTtftP50Ms=CRITERIA.max_ttft_p50_ms
)


def test_planner_matches_brute_force_on_every_generated_demand() -> None:
    outcomes = []
    for demand in DEMANDS:
        space = search_space(demand, ROWS, OFFERS)
        plan, best = solve(space, unit(demand)), brute_force_cost(space)
        assert (plan is None) == (best is None), demand
        if plan is not None and best is not None:
            assert round(plan.usd_per_hour / best, 2) == 1.00 and math.isclose(plan.usd_per_hour, best, abs_tol=1e-6), (
                demand
            )
            assert plan.capacity >= amount(demand) - 1e-9
            assert demand.budgetUsdPerHour is None or plan.usd_per_hour <= demand.budgetUsdPerHour + 1e-9
            assert demand.maxTargets is None or len(plan.placements) <= demand.maxTargets
            assert all(pool.nodes == math.ceil(pool.gpus_used / pool.pool.gpus_per_node) for pool in plan.pools)
        outcomes.append(plan)
    feasible = [p for p in outcomes if p is not None]
    assert len(feasible) >= len(DEMANDS) // 2 and len(outcomes) - len(feasible) >= 5, (
        "the generator must exercise both outcomes"
    )
    assert any(len(p.placements) > 1 for p in feasible), "the generator must reach a mixed plan"


def test_a_mixed_plan_beats_every_single_target_when_node_sizes_differ() -> None:
    """Capacity Blocks make the 8-GPU node cheaper per GPU than the 1-GPU node: the optimum mixes."""
    per_gpu = {(o.instance_type, c): p / o.gpus_per_node for o in OFFERS for c, p in o.usd_per_hour.items() if p}
    big = min((k for k in per_gpu if k[1] == "capacity-block"), key=per_gpu.get)  # type: ignore[arg-type]
    gpu = next(o.gpu for o in OFFERS if o.instance_type == big[0])
    best_density = max(
        r.concurrency / r.gpus_per_replica_set for r in ROWS if r.gpu == gpu and r.published and r.concurrency
    )
    node_gpus = next(o.gpus_per_node for o in OFFERS if o.instance_type == big[0])
    demand = DemandConfig(
        slo=CRITERIA_SLO,
        concurrentUsers=int(best_density * node_gpus) + 1,
        gpuTypes=[gpu],
        capacityTypes=["on-demand", "capacity-block"],
    )
    result = plan_capacity(demand, ROWS, OFFERS)
    assert result.plan is not None and len(result.plan.placements) > 1
    assert all(o.plan is not None and o.plan.usd_per_hour > result.plan.usd_per_hour for o in result.runner_ups)
    assert math.isclose(
        result.plan.usd_per_hour, brute_force_cost(search_space(demand, ROWS, OFFERS)) or 0, abs_tol=1e-6
    )


@pytest.mark.parametrize(
    "demand",
    [d for d in DEMANDS if solve(search_space(d, ROWS, OFFERS), unit(d)) is None][:12],
    ids=lambda d: f"{amount(d):g}{unit(d)}",
)
def test_infeasible_demands_name_exactly_the_binding_constraints(demand: DemandConfig) -> None:
    result = plan_capacity(demand, ROWS, OFFERS)
    assert result.plan is None and result.infeasible is not None
    active = active_constraints(demand)
    unblocking = {
        c for c in active if brute_force_cost(search_space(relaxed_demand(demand, c), ROWS, OFFERS)) is not None
    }
    if unblocking:
        assert set(result.infeasible.binding) == unblocking, result.infeasible.message
    else:
        assert set(result.infeasible.binding) in (set(active), set()), result.infeasible.message
    assert result.infeasible.message.startswith(f"no plan serves {amount(demand):g} {unit(demand)}")


def test_each_constraint_alone_is_named_when_it_binds() -> None:
    priced_gpus = {o.gpu for o in OFFERS if any(o.usd_per_hour.values())}
    fastest = max(
        (r for r in ROWS if r.published and r.gpu in priced_gpus), key=lambda r: r.tokens_per_second_per_user or 0
    )
    other_gpus = sorted({o.gpu for o in OFFERS} - {fastest.gpu})
    cheapest_node = min(p for o in OFFERS for p in o.usd_per_hour.values() if p)
    unpriced = sorted({o.gpu for o in OFFERS} - priced_gpus)
    cases = {
        "slo": DemandConfig(
            slo=SloConfig(
                minTokensPerSecondPerUser=(fastest.tokens_per_second_per_user or 0) * 2,
                maxTtftP50Ms=CRITERIA.max_ttft_p50_ms,
            ),
            concurrentUsers=10,
        ),
        "gpu-types": DemandConfig(
            # The longest TTFT the field allows: no row waits that long.
            slo=SloConfig(minTokensPerSecondPerUser=fastest.tokens_per_second_per_user or 0, maxTtftP50Ms=3_600_000),
            concurrentUsers=1,
            gpuTypes=other_gpus,
            capacityTypes=["on-demand", "capacity-block", "spot"],
        ),
        "budget": DemandConfig(slo=CRITERIA_SLO, concurrentUsers=10, budgetUsdPerHour=cheapest_node / 2),
        "capacity-types": DemandConfig(slo=CRITERIA_SLO, concurrentUsers=10, capacityTypes=["spot"]),
    }
    for expected, demand in cases.items():
        result = plan_capacity(demand, ROWS, OFFERS)
        assert result.infeasible is not None and expected in result.infeasible.binding, (expected, result.infeasible)
    only_unpriced = cases["budget"].model_copy(update={"budgetUsdPerHour": None, "gpuTypes": unpriced})
    if unpriced:
        result = plan_capacity(only_unpriced, ROWS, OFFERS)
        assert result.infeasible is not None and result.infeasible.binding == ("gpu-types",)


def test_free_capacity_is_what_the_spare_gpus_hold_of_the_placed_targets() -> None:
    for demand in DEMANDS[:20]:
        plan = solve(search_space(demand, ROWS, OFFERS), unit(demand))
        if plan is None:
            continue
        spare_sets = {}
        for placement in plan.placements:
            pool = next(u for u in plan.pools if u.pool == placement.pool)
            per_set_gpus = placement.gpus // placement.replica_sets
            spare_sets[placement.target_id] = (pool.spare_gpus // per_set_gpus) * (
                placement.capacity / placement.replica_sets
            )
        by_pool = {}
        for placement in plan.placements:
            by_pool[placement.pool] = max(by_pool.get(placement.pool, 0.0), spare_sets[placement.target_id])
        assert math.isclose(plan.free_capacity, sum(by_pool.values()))
        assert all(u.spare_gpus < u.pool.gpus_per_node for u in plan.pools), "a whole idle node would not be cheapest"


@pytest.mark.parametrize("criteria", [Slo(0, 100), Slo(30, 4_000_000), Slo(30, 250)])
def test_the_catalogs_criteria_are_not_judged_as_the_users_slo(criteria):
    """The catalog's criteria are checked where the catalog loads; a stack without `demand.slo` plans with them
    even where they lie outside what a stack may write (a user's SLO is bounded, the catalog's is data)."""
    demand = demand_of(DemandConfig(concurrentUsers=10, capacityTypes=["spot", "spot"]), criteria)
    assert demand.slo is not None and demand.capacityTypes == ["spot"]
    assert (demand.slo.minTokensPerSecondPerUser, demand.slo.maxTtftP50Ms) == (
        criteria.min_tokens_per_second_per_user,
        criteria.max_ttft_p50_ms,
    )
