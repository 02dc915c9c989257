"""Why the plan is what it is: the runner-up options and why they lost, the catalog rows that could not
serve the demand and why, and, when nothing can, which constraint binds (the one whose relaxation alone
would give a plan), so the message says what to change."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.plan.throughput import CAPACITY_TYPES, CandidateRow, InstanceOffer, Slo
from tools.plan_capacity.model import Demand, pools_for, search_space
from tools.plan_capacity.solver import Plan, build_plan, solve

# Each constraint of a demand: its name in messages, and the Demand field and value that lift it.
CONSTRAINTS: dict[str, tuple[str, str, Any]] = {
    "slo": ("the SLO", "slo", Slo(0.0, math.inf)),
    "gpu-types": ("the allowed GPU types", "gpu_types", None),
    "capacity-types": ("the allowed capacity types", "capacity_types", CAPACITY_TYPES),
    "budget": ("the budget", "budget_usd_per_hour", None),
    "max-targets": ("the maximum number of targets", "max_targets", None),
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
    demand: Demand
    plan: Optional[Plan]
    runner_ups: tuple[Option, ...]
    excluded: tuple[tuple[str, str], ...]  # (target id, why it cannot serve this demand)
    infeasible: Optional[Infeasibility]
    notes: tuple[str, ...] = ()


def exclusion_reason(row: CandidateRow, demand: Demand, offers: tuple[InstanceOffer, ...]) -> Optional[str]:
    """Why this row is not in the search space, or None when it is."""
    if not row.published:
        return "no published figures"
    assert row.tokens_per_second_per_user is not None
    assert row.ttft_p50_ms is not None
    if not row.meets(demand.slo):
        parts = []
        if row.tokens_per_second_per_user < demand.slo.min_tokens_per_second_per_user:
            parts.append(
                f"{row.tokens_per_second_per_user:g} tok/s/user < {demand.slo.min_tokens_per_second_per_user:g}"
            )
        if row.ttft_p50_ms > demand.slo.max_ttft_p50_ms:
            parts.append(f"TTFT p50 {row.ttft_p50_ms:g} ms > {demand.slo.max_ttft_p50_ms:g} ms")
        return "fails the SLO: " + ", ".join(parts)
    if demand.gpu_types is not None and row.gpu not in demand.gpu_types:
        return f"GPU {row.gpu} not in the allowed GPU types ({', '.join(demand.gpu_types)})"
    pools = [p for p in pools_for(offers, demand.gpu_types, demand.capacity_types) if p.gpu == row.gpu]
    if not pools:
        return f"no {row.gpu} instance type has a price for {', '.join(demand.capacity_types)}"
    if all(p.gpus_per_node % row.gpus_per_worker_pod for p in pools):
        return f"a worker needs {row.gpus_per_worker_pod} GPUs, which no {row.gpu} node size divides"
    return None


def single_target_plan(row: CandidateRow, demand: Demand, offers: tuple[InstanceOffer, ...]) -> Optional[Plan]:
    """Closed form for one target: ceil(demand / capacity) replica sets on its cheapest pool."""
    space = dataclasses.replace(search_space(demand, (row,), offers), budget_usd_per_hour=None)
    if not space.rows:
        return None
    sets = space.max_replica_sets(row)
    plans = [
        build_plan(space, {row.target_id: row}, {(row.target_id, pool): sets}, demand.unit)
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
    demand: Demand, rows: tuple[CandidateRow, ...], offers: tuple[InstanceOffer, ...], chosen: Optional[Plan]
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
        options.append(Option(row.target_id, plan, _loss(plan, chosen, demand.budget_usd_per_hour)))
    return sorted(options, key=lambda o: (o.plan.usd_per_hour if o.plan else math.inf, o.target_id))


def relaxed_demand(demand: Demand, constraint: str) -> Demand:
    _, field, lifted = CONSTRAINTS[constraint]
    return dataclasses.replace(demand, **{field: lifted})


def active_constraints(demand: Demand) -> list[str]:
    active = ["slo"]
    active += ["gpu-types"] if demand.gpu_types is not None else []
    active += ["capacity-types"] if set(demand.capacity_types) != set(CAPACITY_TYPES) else []
    active += ["budget"] if demand.budget_usd_per_hour is not None else []
    active += ["max-targets"] if demand.max_targets is not None else []
    return active


def _detail(
    constraint: str,
    demand: Demand,
    relaxed_plan: Plan,
    rows: tuple[CandidateRow, ...],
    offers: tuple[InstanceOffer, ...],
) -> str:
    used = ", ".join(sorted({f"{p.pool.instance_type} ({p.pool.capacity_type})" for p in relaxed_plan.pools}))
    targets = ", ".join(relaxed_plan.target_ids)
    if constraint == "budget":
        return (
            f"the cheapest plan costs ${relaxed_plan.usd_per_hour:,.2f}/h > budget ${demand.budget_usd_per_hour:,.2f}/h"
        )
    if constraint == "slo":
        meeting = [
            f"{r.target_id} ({exclusion_reason(r, demand, offers)})"
            for r in rows
            if r.published and r.meets(demand.slo)
        ]
        elsewhere = f"; the target(s) that meet it cannot serve here: {', '.join(meeting)}" if meeting else ""
        return (
            f"no servable target reaches {demand.slo.min_tokens_per_second_per_user:g} tok/s/user with TTFT p50 <= "
            f"{demand.slo.max_ttft_p50_ms:g} ms{elsewhere}; relaxed, {targets} would serve it"
        )
    if constraint == "gpu-types":
        return f"allowed: {', '.join(demand.gpu_types or ())}; {targets} on {used} would serve it"
    if constraint == "capacity-types":
        return f"allowed: {', '.join(demand.capacity_types)}; a priced offer exists only as {used}"
    return f"maxTargets {demand.max_targets}; it takes {len(relaxed_plan.placements)} targets mixed ({targets})"


def binding_constraints(
    demand: Demand, rows: tuple[CandidateRow, ...], offers: tuple[InstanceOffer, ...]
) -> Infeasibility:
    """Name every constraint whose relaxation alone yields a plan; else what relaxing all of them gives."""
    relaxed = {
        c: solve(search_space(relaxed_demand(demand, c), rows, offers), demand.unit) for c in active_constraints(demand)
    }
    binding = [c for c, plan in relaxed.items() if plan is not None]
    head = f"no plan serves {demand.amount:g} {demand.unit}: "
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
    if solve(search_space(everything, rows, offers), demand.unit) is None:
        return Infeasibility((), head + "no catalog row has published figures and a priced instance type")
    names = " and ".join(CONSTRAINTS[c][0] for c in active_constraints(demand))
    return Infeasibility(
        tuple(active_constraints(demand)),
        head + f"no single constraint is binding alone; {names} together rule out every plan",
    )


def token_shape_note(demand: Demand, benchmark_shape: Optional[tuple[int, int]]) -> Optional[str]:
    """The measured figures hold for the benchmark's token shape; say so when the demand's differs."""
    if demand.token_shape is None or benchmark_shape is None:
        return None
    shape = (demand.token_shape.inputTokens, demand.token_shape.outputTokens)
    if all(abs(a - b) <= 0.1 * b for a, b in zip(shape, benchmark_shape, strict=True)):
        return None
    return (
        f"token shape {shape[0]} in / {shape[1]} out differs from the benchmark's {benchmark_shape[0]} / "
        f"{benchmark_shape[1]} by more than 10%: every figure is an estimate; benchmark your trace before buying"
    )


def plan_capacity(
    demand: Demand,
    rows: tuple[CandidateRow, ...],
    offers: tuple[InstanceOffer, ...],
    benchmark_shape: Optional[tuple[int, int]] = None,
) -> PlanResult:
    """The cheapest plan with its runner-ups and exclusions, or the binding constraint when there is none.
    `benchmark_shape` is the (input, output) tokens per request the catalog's figures were measured at."""
    plan = solve(search_space(demand, rows, offers), demand.unit)
    excluded = tuple((row.target_id, reason) for row in rows if (reason := exclusion_reason(row, demand, offers)))
    infeasible = None if plan is not None else binding_constraints(demand, rows, offers)
    note = token_shape_note(demand, benchmark_shape)
    return PlanResult(
        demand, plan, tuple(runner_ups(demand, rows, offers, plan)), excluded, infeasible, (note,) if note else ()
    )
