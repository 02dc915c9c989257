"""Why the plan is what it is: the runner-up options and why they lost, the catalog rows that could not
serve the demand and why, and, when nothing can, which constraint binds (the one whose relaxation alone
would give a plan), so the message says what to change."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.config.demand import DemandConfig, SloConfig
from serving_stack.plan.throughput import CAPACITY_TYPES, CandidateRow, InstanceOffer
from tools.plan_capacity.model import amount, pools_for, search_space, slo, unit
from tools.plan_capacity.solver import Plan, build_plan, solve

# Each constraint of a demand: its name in messages, and the DemandConfig field and value that lift it (the
# lifted SLO is beyond the field's bounds, so it is constructed unchecked).
CONSTRAINTS: dict[str, tuple[str, str, Any]] = {
    "slo": ("the SLO", "slo", SloConfig.model_construct(minTokensPerSecondPerUser=0.0, maxTtftP50Ms=math.inf)),
    "gpu-types": ("the allowed GPU types", "gpuTypes", None),
    "capacity-types": ("the allowed capacity types", "capacityTypes", list(CAPACITY_TYPES)),
    "budget": ("the budget", "budgetUsdPerHour", None),
    "max-targets": ("the maximum number of targets", "maxTargets", None),
}


@dataclass(frozen=True)
class Option:
    """A runner-up: the cheapest plan that serves the demand with this one target alone."""

    target_id: str
    plan: Optional[Plan]
    reason: str


@dataclass(frozen=True)
class Infeasibility:
    binding: tuple[str, ...]  # keys of CONSTRAINTS
    message: str


@dataclass(frozen=True)
class PlanResult:
    demand: DemandConfig  # its SLO set (`demand_of`)
    plan: Optional[Plan]
    runner_ups: tuple[Option, ...]
    excluded: tuple[tuple[str, str], ...]  # (target id, why it cannot serve this demand)
    infeasible: Optional[Infeasibility]
    notes: tuple[str, ...] = ()


def exclusion_reason(row: CandidateRow, demand: DemandConfig, offers: tuple[InstanceOffer, ...]) -> Optional[str]:
    """Why this row is not in the search space, or None when it is."""
    if not row.published:
        return "no published figures"
    assert row.tokens_per_second_per_user is not None
    assert row.ttft_p50_ms is not None
    if not row.meets(target := slo(demand)):
        parts = []
        if row.tokens_per_second_per_user < target.min_tokens_per_second_per_user:
            parts.append(f"{row.tokens_per_second_per_user:g} tok/s/user < {target.min_tokens_per_second_per_user:g}")
        if row.ttft_p50_ms > target.max_ttft_p50_ms:
            parts.append(f"TTFT p50 {row.ttft_p50_ms:g} ms > {target.max_ttft_p50_ms:g} ms")
        return "fails the SLO: " + ", ".join(parts)
    if demand.gpuTypes is not None and row.gpu not in demand.gpuTypes:
        return f"GPU {row.gpu} not in the allowed GPU types ({', '.join(demand.gpuTypes)})"
    pools = [p for p in pools_for(offers, demand.gpuTypes, demand.capacityTypes) if p.gpu == row.gpu]
    if not pools:
        return f"no {row.gpu} instance type has a price for {', '.join(demand.capacityTypes)}"
    if all(p.gpus_per_node % row.gpus_per_worker_pod for p in pools):
        return f"a worker needs {row.gpus_per_worker_pod} GPUs, which no {row.gpu} node size divides"
    return None


def single_target_plan(row: CandidateRow, demand: DemandConfig, offers: tuple[InstanceOffer, ...]) -> Optional[Plan]:
    """Closed form for one target: ceil(demand / capacity) replica sets on its cheapest pool."""
    space = dataclasses.replace(search_space(demand, (row,), offers), budget_usd_per_hour=None)
    if not space.rows:
        return None
    sets = space.max_replica_sets(row)
    plans = [
        build_plan(space, {row.target_id: row}, {(row.target_id, pool): sets}, unit(demand))
        for pool in space.eligible_pools(row)
    ]
    return min(plans, key=lambda p: (p.usd_per_hour, p.pools[0].pool), default=None)


def _loss(option: Plan, chosen: Optional[Plan], budget: Optional[float]) -> str:
    if budget is not None and option.usd_per_hour > budget + 1e-9:
        return f"over budget: ${option.usd_per_hour:,.2f}/h > ${budget:,.2f}/h"
    if chosen is None:
        return "infeasible"
    extra = option.usd_per_hour - chosen.usd_per_hour
    if extra > 1e-9:
        return f"+${extra:,.2f}/h (+{extra / chosen.usd_per_hour:.0%}) vs the plan"
    if option.gpus_used > chosen.gpus_used:
        return f"same $/h; the plan uses {option.gpus_used - chosen.gpus_used} GPU(s) fewer"
    if option.capacity < chosen.capacity - 1e-9:
        return f"same $/h; the plan serves more ({chosen.capacity:,.1f} vs {option.capacity:,.1f} {chosen.unit})"
    return "same $/h, GPUs and capacity: an equal alternative"


def runner_ups(
    demand: DemandConfig, rows: tuple[CandidateRow, ...], offers: tuple[InstanceOffer, ...], chosen: Optional[Plan]
) -> list[Option]:
    options = []
    for row in search_space(demand, rows, offers).rows:
        plan = single_target_plan(row, demand, offers)
        if plan is None or (
            chosen is not None
            and chosen.target_ids == (row.target_id,)
            and plan.usd_per_hour >= chosen.usd_per_hour - 1e-9
        ):
            continue
        options.append(Option(row.target_id, plan, _loss(plan, chosen, demand.budgetUsdPerHour)))
    return sorted(options, key=lambda o: (o.plan.usd_per_hour if o.plan else math.inf, o.target_id))


def relaxed_demand(demand: DemandConfig, constraint: str) -> DemandConfig:
    _, field, lifted = CONSTRAINTS[constraint]
    return demand.model_copy(update={field: lifted})


def active_constraints(demand: DemandConfig) -> list[str]:
    active = ["slo"]
    active += ["gpu-types"] if demand.gpuTypes is not None else []
    active += ["capacity-types"] if set(demand.capacityTypes) != set(CAPACITY_TYPES) else []
    active += ["budget"] if demand.budgetUsdPerHour is not None else []
    active += ["max-targets"] if demand.maxTargets is not None else []
    return active


def _detail(
    constraint: str,
    demand: DemandConfig,
    relaxed_plan: Plan,
    rows: tuple[CandidateRow, ...],
    offers: tuple[InstanceOffer, ...],
) -> str:
    used = ", ".join(sorted({f"{p.pool.instance_type} ({p.pool.capacity_type})" for p in relaxed_plan.pools}))
    targets = ", ".join(relaxed_plan.target_ids)
    if constraint == "budget":
        return f"the cheapest plan costs ${relaxed_plan.usd_per_hour:,.2f}/h > budget ${demand.budgetUsdPerHour:,.2f}/h"
    if constraint == "slo":
        target = slo(demand)
        meeting = [
            f"{r.target_id} ({exclusion_reason(r, demand, offers)})" for r in rows if r.published and r.meets(target)
        ]
        elsewhere = f"; the target(s) that meet it cannot serve here: {', '.join(meeting)}" if meeting else ""
        return (
            f"no servable target reaches {target.min_tokens_per_second_per_user:g} tok/s/user with TTFT p50 <= "
            f"{target.max_ttft_p50_ms:g} ms{elsewhere}; relaxed, {targets} would serve it"
        )
    if constraint == "gpu-types":
        return f"allowed: {', '.join(demand.gpuTypes or ())}; {targets} on {used} would serve it"
    if constraint == "capacity-types":
        return f"allowed: {', '.join(demand.capacityTypes)}; a priced offer exists only as {used}"
    return f"maxTargets {demand.maxTargets}; it takes {len(relaxed_plan.placements)} targets mixed ({targets})"


def binding_constraints(
    demand: DemandConfig, rows: tuple[CandidateRow, ...], offers: tuple[InstanceOffer, ...]
) -> Infeasibility:
    """Name every constraint whose relaxation alone yields a plan; else what relaxing all of them gives."""
    relaxed = {
        c: solve(search_space(relaxed_demand(demand, c), rows, offers), unit(demand))
        for c in active_constraints(demand)
    }
    binding = [c for c, plan in relaxed.items() if plan is not None]
    head = f"no plan serves {amount(demand):g} {unit(demand)}: "
    if binding:
        lines = [
            f"binding constraint {CONSTRAINTS[c][0]} ({_detail(c, demand, plan, rows, offers)})"
            for c, plan in relaxed.items()
            if plan is not None
        ]
        return Infeasibility(tuple(binding), head + "; or ".join(lines))
    everything = demand
    for constraint in active_constraints(demand):
        everything = relaxed_demand(everything, constraint)
    if solve(search_space(everything, rows, offers), unit(demand)) is None:
        return Infeasibility((), head + "no catalog row has published figures and a priced instance type")
    names = " and ".join(CONSTRAINTS[c][0] for c in active_constraints(demand))
    return Infeasibility(
        tuple(active_constraints(demand)),
        head + f"no single constraint is binding alone; {names} together rule out every plan",
    )


def token_shape_note(demand: DemandConfig, benchmark_shape: Optional[tuple[int, int]]) -> Optional[str]:
    """The measured figures hold for the benchmark's token shape; say so when the demand's differs."""
    if demand.tokenShape is None or benchmark_shape is None:
        return None
    shape = (demand.tokenShape.inputTokens, demand.tokenShape.outputTokens)
    if all(abs(a - b) <= 0.1 * b for a, b in zip(shape, benchmark_shape, strict=True)):
        return None
    return (
        f"token shape {shape[0]} in / {shape[1]} out differs from the benchmark's {benchmark_shape[0]} / "
        f"{benchmark_shape[1]} by more than 10%: every figure is an estimate; benchmark your trace before buying"
    )


def plan_capacity(
    demand: DemandConfig,
    rows: tuple[CandidateRow, ...],
    offers: tuple[InstanceOffer, ...],
    benchmark_shape: Optional[tuple[int, int]] = None,
) -> PlanResult:
    """The cheapest plan with its runner-ups and exclusions, or the binding constraint when there is none.
    `benchmark_shape` is the (input, output) tokens per request the catalog's figures were measured at."""
    plan = solve(search_space(demand, rows, offers), unit(demand))
    excluded = tuple((row.target_id, reason) for row in rows if (reason := exclusion_reason(row, demand, offers)))
    infeasible = None if plan is not None else binding_constraints(demand, rows, offers)
    note = token_shape_note(demand, benchmark_shape)
    return PlanResult(
        demand, plan, tuple(runner_ups(demand, rows, offers, plan)), excluded, infeasible, (note,) if note else ()
    )
