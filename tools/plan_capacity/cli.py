"""`make plan STACK=<stack> [WRITE=1]`: read the stack's `demand:` block and print the cheapest plan that meets
it (targets, replica sets, node pools, $/h, headroom), the runner-ups and why they lost, the rows that
cannot serve it, the cost per 1M output tokens of the chosen targets, and the `targets:` / `aws.nodePools`
config the plan implies. With `--write` (WRITE=1) that config goes into `Pulumi.<stack>.yaml` (comments kept),
so the PR that changes the plan shows every change that reaches the cloud; `pulumi up` never plans.

Exit status 1 when nothing can serve the demand (the message names the binding constraint), 2 on a bad
stack file or `demand:` block, or a plan that cannot be written (the message names what to change).
Reads `Pulumi.<stack>.yaml` directly (no Pulumi runtime needed)."""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts, load_facts
from serving_stack.facts.dates import today as clock_today
from serving_stack.plan.throughput import CandidateRow, InstanceOffer, Slo, instance_offers, token_cost_row
from tools.plan_capacity.explain import PlanResult, plan_capacity
from tools.plan_capacity.model import (
    amount,
    benchmark_token_shape,
    candidate_rows,
    demand_of,
    slo,
    token_cost_markdown,
    unit,
    unplaceable_targets,
)
from tools.plan_capacity.solver import Plan
from tools.plan_capacity.stack_file import (
    check_planned_file,
    plan_to_stack_config,
    pool_name,
    stack_changes,
    stack_file_text,
)
from tools.secret_placeholders import stack_config_of
from tools.stack_files import PROJECT_DIR, read_yaml, stack_config


def read_stack(stack: str, root: Path = PROJECT_DIR) -> StackConfig:
    """The stack's typed config as the program reads it, its `targets` left out (the plan writes them); refused,
    before anything else is read, without the `demand:` block the plan sizes the stack from."""
    config, _ = stack_config(stack, root)
    project = read_yaml(root / "Pulumi.yaml")["name"]
    if config.get(f"{project}:demand") is None:
        problem = f"Pulumi.{stack}.yaml has no `demand:` block, which make plan sizes the stack from"
        raise ConfigError("demand", problem, "a demand: block (docs/capacity.md); a stack naming its targets renders")
    config.pop(f"{project}:targets", None)
    return stack_config_of(config, project)


def _money(value: float) -> str:
    return f"${value:,.2f}"


def result_markdown(result: PlanResult, rows: dict[str, Any], offers: tuple[Any, ...], criteria: Slo) -> str:
    d, target = result.demand, slo(result.demand)
    met = f"tok/s/user >= {target.min_tokens_per_second_per_user:g}, TTFT p50 <= {target.max_ttft_p50_ms:g} ms"
    out = [f"# Capacity plan: {amount(d):g} {unit(d)} ({met})", ""]
    out += [f"> {note}" for note in result.notes] + ([""] if result.notes else [])
    if result.plan is None:
        assert result.infeasible is not None
        return "\n".join([*out, f"**No plan.** {result.infeasible.message}"])
    plan, per = result.plan, result.plan.unit
    lines = [f"| target | pool | replica sets | GPUs | serves ({per}) |", "| --- | --- | --- | --- | --- |"]
    lines += [
        f"| `{p.target_id}` | `{pool_name(p.pool)}` | {p.replica_sets} | {p.gpus} | {p.capacity:,.1f} |"
        for p in plan.placements
    ]
    lines += [
        "",
        "| pool | instance type | capacity | nodes | GPUs used / total | $/h |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{pool_name(u.pool)}` | {u.pool.instance_type} | {u.pool.capacity_type} | {u.nodes} | {u.gpus_used} / {u.gpus} | "
        f"{_money(u.usd_per_hour)} |"
        for u in plan.pools
    ]
    lines += [
        "",
        f"**{_money(plan.usd_per_hour)}/h** for {plan.capacity:,.1f} {per} against a demand of {plan.demand:g} "
        f"(headroom {plan.headroom:+.0%}); the {plan.spare_gpus} spare GPU(s) on the paid nodes could serve "
        f"{plan.free_capacity:,.1f} {per} more at no extra $/h",
    ]
    out += ["## Plan", "", *lines, ""]
    out += [
        "## Runner-ups (one target alone)",
        "",
        "| target | pool | nodes | $/h | why it lost |",
        "| --- | --- | --- | --- | --- |",
    ]
    for option in result.runner_ups:
        assert option.plan is not None
        pools = ", ".join(f"{u.nodes}x {u.pool.instance_type} ({u.pool.capacity_type})" for u in option.plan.pools)
        out.append(
            f"| `{option.target_id}` | {pools} | {sum(u.nodes for u in option.plan.pools)} | {_money(option.plan.usd_per_hour)} | {option.reason} |"
        )
    out += ["", f"## Not eligible ({len(result.excluded)})", ""] + [
        f"- `{target}`: {why}" for target, why in result.excluded
    ]
    chosen = tuple(rows[t] for t in result.plan.target_ids)
    out += [
        "",
        "## Cost per 1M output tokens (chosen targets, at published throughput)",
        "",
        token_cost_markdown([token_cost_row(row, offers, criteria) for row in chosen]),
    ]
    implied = plan_to_stack_config(result.plan, rows)
    out += [
        "",
        "## Stack config this plan implies (WRITE=1 writes it, pools in one zone and sized)",
        "",
        "```yaml",
        yaml.safe_dump(
            {"targets": implied["targets"], "aws": {"nodePools": implied["nodePools"]}}, sort_keys=False
        ).rstrip(),
        "```",
    ]
    return "\n".join(out)


@dataclass(frozen=True)
class StackDemandPlan:
    """A stack's config (its targets left out), its demand planned, and the rows and offers it was planned on."""

    config: StackConfig
    result: PlanResult
    rows: dict[str, CandidateRow]
    offers: tuple[InstanceOffer, ...]
    criteria: Slo
    ended_prices: tuple[str, ...] = ()  # left out of `offers`: past their reviewBy
    unplaceable: tuple[str, ...] = ()  # targets left out of `rows`: their GPU has no facts yet

    @property
    def plan(self) -> Optional[Plan]:
        return self.result.plan


def plan_of_stack(
    stack: str, root: Path = PROJECT_DIR, facts: Optional[Facts] = None, today: Optional[datetime.date] = None
) -> StackDemandPlan:
    """The cheapest plan of the stack's `demand:` block on the catalog's rows and the instance offers (Capacity
    Block prices included while current on `today`, default the clock), or a `ConfigError` naming the bad key."""
    facts = facts or load_facts()
    today = today or clock_today()
    config = read_stack(stack, root)
    demand = config.demand
    assert demand is not None  # read_stack refuses a stack without one
    unknown = demand.check_gpu_types(facts.aws.gpus)
    if unknown:
        raise ConfigError.combined(unknown)
    criteria = Slo(facts.catalog.criteria.minTokensPerSecondPerUser, facts.catalog.criteria.maxTtftP50Ms)
    rows, offers = candidate_rows(facts.catalog, facts.aws), instance_offers(facts.aws, facts.capacity_prices, today)
    try:
        result = plan_capacity(demand_of(demand, criteria), rows, offers, benchmark_token_shape(facts.catalog))
    except Exception as solver_error:  # highspy raises a bare Exception ("Error adding constraint to the model.")
        problem = f"the capacity solver cannot plan this demand: {bounded(str(solver_error), quote=False)}"
        raise ConfigError("demand", problem) from None
    ended = facts.capacity_prices.ended_capacity_blocks(today)
    unplaceable = unplaceable_targets(facts.catalog, facts.aws)
    return StackDemandPlan(config, result, {r.target_id: r for r in rows}, offers, criteria, ended, unplaceable)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make plan", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--write", action="store_true", help="write the planned targets and pools into the stack file")
    parser.add_argument("--project-dir", type=Path, default=PROJECT_DIR, help="the Pulumi project (default: this repo)")
    args = parser.parse_args(argv)
    facts = load_facts()
    try:
        planned = plan_of_stack(args.stack, args.project_dir, facts)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        "".join(
            f"> **Price ended** (catalog/capacity_prices.yaml `reviewBy`): {line}\n" for line in planned.ended_prices
        )
    )
    print("".join(f"> **Not placeable** (no GPU facts yet): {line}\n" for line in planned.unplaceable))
    print(result_markdown(planned.result, planned.rows, planned.offers, planned.criteria))
    if planned.plan is None:
        return 1
    if args.write:
        path = args.project_dir / f"Pulumi.{args.stack}.yaml"
        project = read_yaml(args.project_dir / "Pulumi.yaml")["name"]
        try:
            changes = stack_changes(planned.config, planned.plan, planned.rows, facts)
            text = stack_file_text(path, project, changes)
            check_planned_file(text, project, facts)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        path.write_text(text)
        print(f"\nwrote {', '.join(changes)} into {path.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
