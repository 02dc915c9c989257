"""`summary.md` of a render: what a reviewer wants to see about a stack at a glance."""

from __future__ import annotations

from typing import Optional

from serving_stack.contract.outputs import NodePool, StackOutputs
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.sagemaker import (
    ENDPOINT_TAG,
    SPEC_PROVENANCE_TAG,
    UNVERIFIED,
    HuggingFaceSource,
    PlannedEndpoint,
)
from serving_stack.plan.stack import StackPlan
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
            f"| `{r.pool}` | {r.instanceType or 'n/a'} | {r.capacityType} | {r.minSize}..{r.maxSize} | "
            f"{r.minSize * r.gpusPerNode}..{r.maxSize * r.gpusPerNode} | "
            f"{_money(r.usdPerHour)} | {_money(r.usdPerHourMin)}..{_money(r.usdPerHourMax)} |"
        )
    return "\n".join(lines)


def stack_cost_line(contract: StackOutputs) -> str:
    """The stack's $/h, one line (summary.md and the render's output): its GPU pools at desired size and its
    SageMaker endpoints at their initial instance counts, at on-demand list prices (the outputs' `usdPerHour`)."""
    parts = {
        "GPU pools": [pool.usdPerHour for pool in contract.nodePools],
        "SageMaker endpoints": [e.usdPerHour for e in contract.endpoints if e.kind == "sagemaker"],
    }
    costs = [cost for part in parts.values() for cost in part]
    if not costs:
        return "Stack cost: no GPU pool or SageMaker endpoint of its own (the GPUs are the cluster's)."
    unpriced = sum(cost is None for cost in costs)
    return (
        f"Stack cost: ${sum(c or 0 for c in costs):,.2f}/h on demand ("
        + ", ".join(f"{name} ${sum(c or 0 for c in part):,.2f}/h" for name, part in parts.items() if part)
        + (f"; {unpriced} without a published price not counted" if unpriced else "")
        + "); EKS control plane, system nodes, NAT gateways and storage are extra."
    )


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
        f"tok/s/user >= {criteria.minTokensPerSecondPerUser:g} and TTFT p50 < {criteria.maxTtftP50Ms / 1000:g} s. "
        "The table's speculative rows were measured with synthetic acceptance (a fixed acceptance length, "
        "`rejection_sample_method: synthetic`): each figure's acceptance basis says so, or the "
        "`targets[].acceptanceLength` it is scaled to.",
        "",
    ]
    warnings = run.plan.warnings if run.plan is not None else ()
    if warnings:
        lines += ["## ⚠️ Warnings", "", *(f"- {w}" for w in warnings), ""]
    lines += [
        "## Serving endpoints",
        "",
        _row(
            [
                "endpoint",
                "kind",
                "GPUs",
                "expected output tok/s",
                "tok/s/user",
                "TTFT p50 ms",
                "criteria",
                "URL",
                "acceptance basis",
            ]
        ),
        _row(["---"] * 9),
    ]
    for endpoint in contract.endpoints:
        recipe = catalog.recipe(endpoint.id) if endpoint.id in catalog.selectable else None
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
                    endpoint.throughputBasis or "n/a",
                ]
            )
        )
    total_gpus = sum(e.gpus for e in contract.endpoints)
    total_tps = sum(e.expectedOutputTokensPerSecond or 0 for e in contract.endpoints)
    lines += [
        "",
        f"**Total:** {total_gpus} GPUs, {total_tps:,.2f} expected output tok/s.",
        "",
        f"**{stack_cost_line(contract)}**",
        "",
    ]
    lines += operability_markdown(run, [e.id for e in contract.endpoints if e.kind == "dynamo"])
    if contract.nodePools:
        lines += ["## GPU node pools", "", pool_cost_markdown(contract.nodePools), ""]
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
    if run.plan is not None:
        lines += sagemaker_containers_markdown(run.plan.sagemaker)
        lines += before_up_markdown(run.plan)
        lines += capacity_risk_markdown(run.plan)
        lines += [capacity_markdown(run.plan.capacity), ""]
    return "\n".join(lines)


def sagemaker_containers_markdown(endpoints: tuple[PlannedEndpoint, ...]) -> list[str]:
    """Per Hugging Face endpoint: the container the recipe's minimum vLLM picked, the arguments it is given,
    and what the plan notes (unverified recipe requirements, the traffic-shifting mode it fell back to)."""
    lines: list[str] = []
    for endpoint in endpoints:
        source = endpoint.source
        if not isinstance(source, HuggingFaceSource):
            continue
        if not lines:
            lines += ["## SageMaker containers", ""]
        container = (
            f"`{source.container}` (bundles vLLM {source.vllm_version}; the recipe needs >= {source.minimum_vllm})"
            if source.container
            else "an image of one's own (`huggingface.lmiImage`; its vLLM is not checked)"
        )
        arguments = " ".join(
            flag if value is None else f"{flag} {value}" for flag, value in source.engine_arguments.items()
        )
        lines += [
            f"- `{endpoint.name}`: {container}, image `{endpoint.container.image}`, weights "
            + (
                f"from `{endpoint.container.model_data.s3_uri}` (network isolation)"
                if endpoint.container.model_data
                else "from the Hugging Face Hub at container start"
            )
            + f", blue/green {endpoint.deployment.type}; recipe arguments `{arguments}` (catalog/sagemaker_lmi.yaml)",
            *(f"  - {note}" for note in endpoint.notes),
        ]
    return [*lines, ""] if lines else []


def before_up_markdown(plan: StackPlan) -> list[str]:
    """Dated warnings and the placeholder values a real `pulumi up` refuses, with what to set."""
    lines: list[str] = []
    if plan.warnings:
        lines += ["## Dates", "", *(f"- warning: {warning}" for warning in plan.warnings), ""]
    if plan.placeholders:
        lines += [
            "## Placeholders to set before `pulumi up`",
            "",
            "The offline render accepted these; `pulumi up` refuses each until it is set:",
            "",
            *(f"- {placeholder.line()}" for placeholder in plan.placeholders),
            "",
        ]
    return lines


RISK = {
    "on-demand": (
        "HIGH",
        "no reservation: an insufficient-capacity error (InsufficientInstanceCapacity) for this type in one zone "
        "is the likeliest first-`up` failure, and it shows only after the node group's wait",
    ),
    "spot": ("HIGH", "spot capacity may be absent at `up` and is reclaimed with two minutes' notice"),
    "odcr": (
        "LOW",
        "launches into the On-Demand Capacity Reservation; nodes beyond its instance count fail to launch",
    ),
    "capacity-block": (
        "LOW inside the block",
        "launches only during the Capacity Block's window; EKS scales the group to 0 forty minutes before it ends",
    ),
}
HOW_TO_RESERVE = (
    "Reserve before the first `up`: an ODCR (`aws ec2 create-capacity-reservation --instance-type <type> "
    "--instance-platform Linux/UNIX --availability-zone <zone> --instance-count <desired>`, then the pool's "
    "`capacityType: odcr` and `capacityReservationId`), or a Capacity Block (`aws ec2 "
    "describe-capacity-block-offerings --instance-type <type> --instance-count <n> --capacity-duration-hours <h>`, "
    "`aws ec2 purchase-capacity-block`, then `capacityType: capacity-block`, `capacityReservationId` and "
    "`kubernetesVersion`); docs/aws.md, 'Capacity: On-Demand, Spot, ODCR, Capacity Blocks'."
)


def capacity_risk_markdown(plan: StackPlan) -> list[str]:
    """Per managed GPU pool: how likely the first `up` is to find no capacity, and how to reserve it."""
    pools = [p for p in plan.pools if p.managed]
    if not pools:
        return []
    lines = [
        "## First `up`: capacity risk per GPU pool",
        "",
        "| pool | instance type | zone | capacity | nodes at `up` | risk | why |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for pool in pools:
        risk, why = RISK.get(pool.capacity_type, ("unknown", "capacity type not modelled"))
        reservation = f" `{pool.capacity_reservation_id}`" if pool.capacity_reservation_id else ""
        lines.append(
            f"| `{pool.name}` | {pool.instance_type} | {pool.availability_zone} | {pool.capacity_type}{reservation} "
            f"| {pool.desired_size} | {risk} | {why} |"
        )
    if any(p.capacity_type in ("on-demand", "spot") for p in pools):
        lines += ["", HOW_TO_RESERVE]
    return [*lines, ""]
