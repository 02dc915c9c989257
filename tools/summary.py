"""`summary.md` of a render: what a reviewer wants to see about a stack at a glance, read from the outputs
contract, the plan the program built and the resources it registered (nothing is recomputed here)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from serving_stack.contract.outputs import NodePool, StackOutputs
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.operability import PART_OF, SKIP_AWAIT_ANNOTATION, TARGET_ID_ANNOTATION
from serving_stack.plan.sagemaker import ENDPOINT_TAG, SPEC_PROVENANCE_TAG, UNVERIFIED, HuggingFaceSource
from serving_stack.plan.stack import StackCapacity, StackPlan
from tools.mock_runtime import ProgramRun, RecordedResource
from tools.plan_capacity.model import token_cost_cell

RISK = {
    "on-demand": (
        "HIGH",
        "no reservation: an insufficient-capacity error (InsufficientInstanceCapacity) for this type in one zone "
        "is the likeliest first-`up` failure, and it shows only after the node group's wait",
    ),
    "spot": ("HIGH", "spot capacity may be absent at `up` and is reclaimed with two minutes' notice"),
    "odcr": ("LOW", "launches into the On-Demand Capacity Reservation; nodes beyond its instance count fail to launch"),
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
MEETS = {True: "yes", False: "no", None: "n/a"}
WHY_A_DEPLOYMENT = (
    "The canary is a long-running Deployment scraped through a PodMonitor, not a CronJob: a CronJob's pod exits "
    "seconds after its request, before Prometheus scrapes it, and pushing to a Pushgateway instead keeps a dead "
    "canary's last value looking fresh forever. `NemotronCanaryStale` fires when its results stop."
)


def table(header: list[str], rows: Iterable[str]) -> list[str]:
    """A Markdown table: the header, its `---` separator, one line per row (its cells joined by " | ")."""
    return [f"| {' | '.join(header)} |", f"| {' | '.join(['---'] * len(header))} |", *(f"| {row} |" for row in rows)]


def _money(value: Optional[float], form: str = ",.2f") -> str:
    return f"${value:{form}}" if value is not None else "n/a"


def _or_na(value: Optional[float], form: str) -> str:
    return format(value, form) if value else "n/a"


def pool_cost_markdown(rows: list[NodePool]) -> str:
    header = ["pool", "instance type", "capacity", "nodes", "GPUs", "$/h at desired", "$/h at min..max"]
    lines = (
        f"`{r.pool}` | {r.instanceType or 'n/a'} | {r.capacityType} | {r.minSize}..{r.maxSize} | "
        f"{r.minSize * r.gpusPerNode}..{r.maxSize * r.gpusPerNode} | {_money(r.usdPerHour)} | "
        f"{_money(r.usdPerHourMin)}..{_money(r.usdPerHourMax)}"
        for r in rows
    )
    return "\n".join(table(header, lines))


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
    rows = []
    for e in contract.endpoints:
        ttft = catalog.recipe(e.id).entry.performance.ttftP50Ms if e.id in catalog.selectable else None
        verdict = {True: "pass", False: "FAIL", None: "n/a"}[e.meetsPublishedCriteria]
        rows.append(
            f"`{e.id}` | {e.kind} | {e.gpus} | {_or_na(e.expectedOutputTokensPerSecond, ',.2f')} | "
            f"{_or_na(e.expectedTokensPerSecondPerUser, 'g')} | {'n/a' if ttft is None else f'{ttft:g}'} | {verdict} | "
            f"`{e.url}` | {e.throughputBasis or 'n/a'}"
        )
    header = ["endpoint", "kind", "GPUs", "expected output tok/s", "tok/s/user", "TTFT p50 ms", "criteria", "URL"]
    lines += ["## Serving endpoints", "", *table([*header, "acceptance basis"], rows)]
    total_tps = sum(e.expectedOutputTokensPerSecond or 0 for e in contract.endpoints)
    lines += [
        "",
        f"**Total:** {sum(e.gpus for e in contract.endpoints)} GPUs, {total_tps:,.2f} expected output tok/s.",
        "",
        f"**{stack_cost_line(contract)}**",
        "",
        *operability_markdown(run, [e.id for e in contract.endpoints if e.kind == "dynamo"]),
    ]
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
        lines += [*_sagemaker_containers(run.plan), *_placeholders(run.plan), *_capacity_risk(run.plan)]
        lines += [*_token_costs(run.plan.capacity), *_scaling(run.plan.capacity), ""]
    return "\n".join(lines)


def _sagemaker_containers(plan: StackPlan) -> list[str]:
    """Per Hugging Face endpoint: the container the recipe's minimum vLLM picked, the arguments it is given,
    and what the plan notes (unverified recipe requirements, the traffic-shifting mode it fell back to)."""
    lines: list[str] = []
    for endpoint in (e for e in plan.sagemaker if isinstance(e.source, HuggingFaceSource)):
        source = endpoint.source
        assert isinstance(source, HuggingFaceSource)
        container = (
            f"`{source.container}` (bundles vLLM {source.vllm_version}; the recipe needs >= {source.minimum_vllm})"
            if source.container
            else "an image of one's own (`huggingface.lmiImage`; its vLLM is not checked)"
        )
        arguments = " ".join(flag if v is None else f"{flag} {v}" for flag, v in source.engine_arguments.items())
        weights = (
            f"from `{endpoint.container.model_data.s3_uri}` (network isolation)"
            if endpoint.container.model_data
            else "from the Hugging Face Hub at container start"
        )
        lines += [
            f"- `{endpoint.name}`: {container}, image `{endpoint.container.image}`, weights {weights}, blue/green "
            f"{endpoint.shifting}; recipe arguments `{arguments}` (catalog/sagemaker_lmi.yaml)",
            *(f"  - {note}" for note in endpoint.notes),
        ]
    return ["## SageMaker containers", "", *lines, ""] if lines else []


def _placeholders(plan: StackPlan) -> list[str]:
    """The placeholder values a real `pulumi up` refuses, with what to set."""
    if not plan.placeholders:
        return []
    return [
        "## Placeholders to set before `pulumi up`",
        "",
        "The offline render accepted these; `pulumi up` refuses each until it is set:",
        "",
        *(f"- {placeholder.line()}" for placeholder in plan.placeholders),
        "",
    ]


def _capacity_risk(plan: StackPlan) -> list[str]:
    """Per managed GPU pool: how likely the first `up` is to find no capacity, and how to reserve it."""
    pools = [p for p in plan.pools if p.managed]
    if not pools:
        return []
    rows = []
    for p in pools:
        risk, why = RISK.get(p.capacity_type, ("unknown", "capacity type not modelled"))
        reservation = f" `{p.capacity_reservation_id}`" if p.capacity_reservation_id else ""
        rows.append(
            f"`{p.name}` | {p.instance_type} | {p.availability_zone} | {p.capacity_type}{reservation} | "
            f"{p.desired_size} | {risk} | {why}"
        )
    header = ["pool", "instance type", "zone", "capacity", "nodes at `up`", "risk", "why"]
    lines = ["## First `up`: capacity risk per GPU pool", "", *table(header, rows)]
    if any(p.capacity_type in ("on-demand", "spot") for p in pools):
        lines += ["", HOW_TO_RESERVE]
    return [*lines, ""]


def _token_costs(capacity: StackCapacity) -> list[str]:
    """The cost of 1M output tokens on each Dynamo target where it runs, beside the cheapest elsewhere."""
    if not capacity.token_costs:
        return []
    rows = (
        f"`{c.target_id}` | {c.runs_on} | **{_money(c.usd_per_million, '.3f')}** | "
        f"{token_cost_cell(c.cheapest.by_capacity_type['on-demand'])} | "
        f"{token_cost_cell(c.cheapest.by_capacity_type['capacity-block'])} | "
        f"{MEETS[c.cheapest.meets_criteria]} | {c.cheapest.basis}"
        for c in capacity.token_costs
    )
    header = ["target", "runs on", "$/1M output tokens there", "cheapest on-demand", "cheapest capacity block"]
    return [
        "## Cost per 1M output tokens",
        "",
        *table([*header, "meets criteria", "acceptance basis"], rows),
        "",
        "At the published output tok/s per GPU (scaled to `targets[].acceptanceLength` where set; the acceptance "
        "basis column says what each rests on), every replica set busy at its measured concurrency the whole "
        "hour: a floor (idle capacity and headroom cost the same per hour). The figure where the target "
        "runs is `usdPerMillionOutputTokens` in the outputs, its basis `throughputBasis`.",
        "",
        *(f"**Price ended** (catalog/capacity_prices.yaml `reviewBy`): {line}." for line in capacity.ended_prices),
        *([""] if capacity.ended_prices else []),
    ]


def _trigger(spec: Mapping[str, Any], name: str) -> str:
    return next(str(t["metadata"]["threshold"]) for t in spec["triggers"] if t["name"] == name)


def _scaling(capacity: StackCapacity) -> list[str]:
    serving, cluster = capacity.serving_scaling, capacity.cluster_scaling
    lines: list[str] = []
    if serving is not None:
        how = "installed by the stack" if serving.install_keda else "already running on the cluster"
        triggers = ("inflight-per-replica", "queue-per-replica", "ttft-p50-vs-slo")
        rows = (
            f"`{o['metadata']['name']}` | {o['spec']['minReplicaCount']}..{o['spec']['maxReplicaCount']} | "
            + " | ".join(_trigger(o["spec"], t) for t in triggers)
            for o in serving.scaled_objects
        )
        lines += [
            f"KEDA {serving.keda.version} ({how}) scales each component through its scaling adapter, on the "
            "largest of: requests in flight per replica (the measured concurrency), queued requests per "
            "replica, TTFT p50 against the SLO. Pulumi ignores the replicas it owns.",
            "",
            *table(["ScaledObject", "replicas", "in flight / replica", "queued / replica", "TTFT p50 (s)"], rows),
            "",
        ]
    if cluster is not None:
        pools = ", ".join(f"`{pool}`" for pool in cluster.pool_tags) or "none"
        lines += [
            f"cluster-autoscaler (chart {cluster.chart.version}, image {cluster.values['image']['tag']}) grows "
            f"and shrinks the GPU pools {pools} between their min and max sizes; their Auto Scaling groups carry "
            "the node-template tags that let it scale a pool up from zero.",
            "",
        ]
    nothing = ["Nothing scales with load (no `autoscaling.targets`, no cluster-autoscaler).", ""]
    return ["## Scaling with load", "", *(lines or nothing)]


def _ops_objects(run: ProgramRun) -> dict[tuple[str, str], RecordedResource]:
    """The ops programs' objects (smoke Job, benchmark CronJob, canary Deployment and PodMonitor) by (kind, target)."""
    found = {}
    for resource in run.resources:
        metadata = resource.inputs.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        labels = metadata.get("labels") or {}
        if resource.custom and PART_OF.items() <= labels.items() and TARGET_ID_ANNOTATION in annotations:
            found[(resource.inputs["kind"], annotations[TARGET_ID_ANNOTATION])] = resource
    return found


def _smoke(job: Optional[RecordedResource]) -> str:
    if job is None:
        return "off"
    name = job.inputs["metadata"]["name"]
    if (job.inputs["metadata"].get("annotations") or {}).get(SKIP_AWAIT_ANNOTATION) == "true":
        return f"`{name}`, not awaited (`dynamo.readiness.wait` is off)"
    return f"`{name}`, gates `up` (at most {job.custom_timeouts.get('create', '10m')})"


def _benchmark(cron_job: Optional[RecordedResource]) -> str:
    if cron_job is None:
        return "off"
    name, spec = cron_job.inputs["metadata"]["name"], cron_job.inputs["spec"]
    return f"`{name}`, {'suspended (run on demand)' if spec['suspend'] else 'schedule `' + spec['schedule'] + '`'}"


def _canary(deployment: Optional[RecordedResource], monitor: Optional[RecordedResource]) -> str:
    if deployment is None:
        return "off"
    args = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    interval = dict(zip(args[::2], args[1::2], strict=True))["--interval"]
    scraped = "scraped by its PodMonitor" if monitor is not None else "**not scraped** (monitoring off)"
    return f"`{deployment.inputs['metadata']['name']}`, every {interval} s, {scraped}"


def operability_markdown(run: ProgramRun, dynamo_endpoints: list[str]) -> list[str]:
    """The smoke test, benchmark and canary of each Dynamo endpoint, as the program registered them."""
    objects = _ops_objects(run)
    if not objects:
        return []
    (namespace,) = {r.inputs["metadata"]["namespace"] for r in objects.values()}
    rows = (
        f"`{e}` | {_smoke(objects.get(('Job', e)))} | {_benchmark(objects.get(('CronJob', e)))} | "
        f"{_canary(objects.get(('Deployment', e)), objects.get(('PodMonitor', e)))}"
        for e in dynamo_endpoints
    )
    header = ["endpoint", "smoke test (Job)", "benchmark (CronJob)", "canary (Deployment)"]
    lines = ["## Smoke test, benchmark, canary", "", *table(header, rows)]
    benchmarks = [r.inputs["metadata"]["name"] for (kind, _), r in sorted(objects.items()) if kind == "CronJob"]
    if benchmarks:
        lines += [
            "",
            "Run a benchmark (each run is a new Job; the log ends with the comparison against the published row):",
            "",
            "```bash",
            f"kubectl create job -n {namespace} --from=cronjob/{benchmarks[0]} {benchmarks[0]}-$(date +%s)",
            "```",
        ]
    return [*lines, "", WHY_A_DEPLOYMENT, "", "How to run and read them: docs/operability-programs.md.", ""]
