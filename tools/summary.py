"""`summary.md` of a render: what a reviewer wants to see about a stack at a glance."""

from __future__ import annotations

from typing import Optional

from serving_stack.contract.outputs import NodePool, StackOutputs
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.sagemaker import ENDPOINT_TAG, SPEC_PROVENANCE_TAG, UNVERIFIED
from tools.capacity_summary import capacity_markdown
from tools.mock_runtime import ProgramRun
from tools.operability_summary import operability_markdown


def _money(value: Optional[float]) -> str:
    return f"${value:,.2f}" if value is not None else "n/a"


def pool_cost_markdown(rows: list[NodePool]) -> str:
    """The rows as a `summary.md` table."""
    lines = [
        "| pool | instance type | capacity | nodes | GPUs | $/h at desired | $/h at min..max |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| `{r.pool}` | {r.instanceType or 'n/a'} | {r.capacityType} | {r.nodes} | {r.gpus} | "
            f"{_money(r.usdPerHourDesired)} | {_money(r.usdPerHourMin)}..{_money(r.usdPerHourMax)} |"
        )
    return "\n".join(lines)


def _row(cells: list[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def summary_markdown(stack: str, run: ProgramRun) -> str:
    catalog = load_catalog()
    contract = StackOutputs.model_validate(run.outputs)
    criteria = catalog.criteria
    lines = [
        f"# Stack `{stack}`",
        "",
        f"{len(run.resources)} resources. Expected throughput is the published table "
        f"({catalog.data.benchmark.workload}) scaled by the GPUs each target uses; the criteria are "
        f"tok/s/user >= {criteria.minTokensPerSecondPerUser:g} and TTFT p50 < {criteria.maxTtftP50Ms / 1000:g} s.",
        "",
        "## Serving endpoints",
        "",
        _row(["endpoint", "kind", "GPUs", "expected output tok/s", "tok/s/user", "TTFT p50 ms", "criteria", "URL"]),
        _row(["---"] * 8),
    ]
    for endpoint in contract.endpoints:
        recipe = catalog.recipes.get(endpoint.id)
        published_ttft = recipe.entry.performance.ttftP50Ms if recipe else None
        ttft = f"{published_ttft:g}" if published_ttft is not None else "n/a"
        verdict = {True: "pass", False: "FAIL", None: "n/a"}[endpoint.meetsPublishedCriteria]
        lines.append(
            _row(
                [
                    f"`{endpoint.id}`",
                    endpoint.kind,
                    endpoint.gpus,
                    f"{endpoint.expectedOutputTokensPerSecond:,.2f}"
                    if endpoint.expectedOutputTokensPerSecond
                    else "n/a",
                    f"{endpoint.expectedTokensPerSecondPerUser:g}"
                    if endpoint.expectedTokensPerSecondPerUser
                    else "n/a",
                    ttft,
                    verdict,
                    f"`{endpoint.url}`",
                ]
            )
        )
    total_gpus = sum(e.gpus for e in contract.endpoints)
    total_tps = sum(e.expectedOutputTokensPerSecond or 0 for e in contract.endpoints)
    lines += ["", f"**Total:** {total_gpus} GPUs, {total_tps:,.2f} expected output tok/s.", ""]
    lines += operability_markdown(run, [e.id for e in contract.endpoints if e.kind == "dynamo"])
    if contract.nodePools:
        rows = contract.nodePools
        desired = sum(r.usdPerHourDesired or 0 for r in rows)
        lines += [
            "## GPU node pools",
            "",
            pool_cost_markdown(rows),
            "",
            f"**Stack GPU pools at desired size:** ${desired:,.2f}/h on demand"
            + (
                " (pools without a published price not counted)"
                if any(r.usdPerHourDesired is None for r in rows)
                else ""
            )
            + "; EKS control plane, system nodes, NAT and storage are extra.",
            "",
        ]
    unverified = [
        r.inputs["tags"][ENDPOINT_TAG]
        for r in run.of_type("aws:sagemaker/endpoint:Endpoint")
        if (r.inputs.get("tags") or {}).get(SPEC_PROVENANCE_TAG) == UNVERIFIED
    ]
    if unverified:
        lines += [
            f"**UNVERIFIED JumpStart spec** (not fetched from the content bucket; tests and demos only): "
            f"{', '.join(f'`{name}`' for name in unverified)}. Refresh it with "
            "`python -m tools.refresh_jumpstart_snapshot` before a real deploy.",
            "",
        ]
    sagemaker_costs = [e.costPerHourUsd for e in contract.endpoints if e.kind == "sagemaker" and e.costPerHourUsd]
    if sagemaker_costs:
        lines += [
            f"**SageMaker endpoints:** ${sum(sagemaker_costs):,.2f}/h at initial instance counts.",
            "",
        ]
    if run.plan is not None:
        lines += [capacity_markdown(run.plan.capacity), ""]
    return "\n".join(lines)
