"""`make plan STACK=<stack>`: read the stack's `demand:` block and print the cheapest plan that meets
it (targets, replica sets, node pools, $/h, headroom), the runner-ups and why they lost, the rows that
cannot serve it, the cost per 1M output tokens of the chosen targets, and the `targets:` /
`aws.nodePools` config the plan implies. Exit status 1 when nothing can serve the demand (the message
names the binding constraint), 2 on a bad `demand:` block.

Reads `Pulumi.<stack>.yaml` directly (no Pulumi runtime needed)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pydantic
import yaml

from serving_stack.config.demand import DemandConfig
from serving_stack.errors import ConfigError, from_validation_error
from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.instance_types import load_aws_catalog
from serving_stack.plan.capacity import Plan
from serving_stack.plan.capacity_explain import PlanResult, plan_capacity
from serving_stack.plan.capacity_inputs import benchmark_token_shape, candidate_rows, instance_offers
from serving_stack.plan.capacity_model import Slo, demand_of
from serving_stack.plan.capacity_stack import plan_to_stack_config, pool_name
from serving_stack.plan.token_cost import token_cost_markdown, token_cost_rows

ROOT = Path(__file__).resolve().parent.parent


def read_demand(stack: str, root: Path = ROOT) -> DemandConfig:
    project = yaml.safe_load((root / "Pulumi.yaml").read_text())["name"]
    path = root / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise ConfigError("--stack", f"{path.name} does not exist")
    config = (yaml.safe_load(path.read_text()) or {}).get("config", {})
    raw = config.get(f"{project}:demand")
    if raw is None:
        raise ConfigError("demand", f"{path.name} has no `{project}:demand` block", "see docs/capacity.md")
    try:
        return DemandConfig.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, DemandConfig, prefix="demand.") from None


def _money(value: float) -> str:
    return f"${value:,.2f}"


def plan_markdown(plan: Plan) -> str:
    unit = plan.unit
    lines = [f"| target | pool | replica sets | GPUs | serves ({unit}) |", "| --- | --- | --- | --- | --- |"]
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
        f"**{_money(plan.usd_per_hour)}/h** for {plan.capacity:,.1f} {unit} against a demand of {plan.demand:g} "
        f"(headroom {plan.headroom:+.0%}); the {plan.spare_gpus} spare GPU(s) on the paid nodes could serve "
        f"{plan.free_capacity:,.1f} {unit} more at no extra $/h",
    ]
    return "\n".join(lines)


def result_markdown(result: PlanResult, rows: dict[str, Any], offers: tuple[Any, ...], criteria: Slo) -> str:
    d = result.demand
    slo = f"tok/s/user >= {d.slo.min_tokens_per_second_per_user:g}, TTFT p50 <= {d.slo.max_ttft_p50_ms:g} ms"
    out = [f"# Capacity plan: {d.amount:g} {d.unit} ({slo})", ""]
    out += [f"> {note}" for note in result.notes] + ([""] if result.notes else [])
    if result.plan is None:
        assert result.infeasible is not None
        return "\n".join([*out, f"**No plan.** {result.infeasible.message}"])
    out += ["## Plan", "", plan_markdown(result.plan), ""]
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
        token_cost_markdown(token_cost_rows(chosen, offers, criteria)),
    ]
    implied = plan_to_stack_config(result.plan, rows)
    out += [
        "",
        "## Stack config this plan implies (`targets: auto`)",
        "",
        "```yaml",
        yaml.safe_dump(
            {"targets": implied["targets"], "aws": {"nodePools": implied["nodePools"]}}, sort_keys=False
        ).rstrip(),
        "```",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="dev")
    args = parser.parse_args(argv)
    catalog, aws_catalog = load_catalog(), load_aws_catalog()
    try:
        demand_config = read_demand(args.stack)
        unknown = demand_config.unknown_gpu_types(list(aws_catalog.gpus))
        if unknown:
            raise ConfigError("demand.gpuTypes", f"unknown GPU type(s) {unknown}", ", ".join(aws_catalog.gpus))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    criteria = Slo(catalog.criteria.minTokensPerSecondPerUser, catalog.criteria.maxTtftP50Ms)
    rows, offers = candidate_rows(catalog, aws_catalog), instance_offers(aws_catalog)
    result = plan_capacity(demand_of(demand_config, criteria), rows, offers, benchmark_token_shape(catalog))
    print(result_markdown(result, {r.target_id: r for r in rows}, offers, criteria))
    return 0 if result.plan is not None else 1


if __name__ == "__main__":
    sys.exit(main())
