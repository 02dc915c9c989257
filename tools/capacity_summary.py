"""The capacity sections of `summary.md`: the cost of 1M output tokens on each Dynamo target where it runs and
what scales with load (the time a new GPU node takes to serve is in the cold-start section, tools/rollout).
Everything comes from the plan the program built (`StackPlan.capacity`), nothing is recomputed here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from serving_stack.plan.stack import StackCapacity
from serving_stack.plan.throughput import TargetTokenCost, TokenCost


def _usd(value: Optional[float]) -> str:
    return f"${value:.3f}" if value is not None else "n/a"


def _cheapest(cost: Optional[TokenCost]) -> str:
    return f"${cost.usd_per_million:.3f} ({cost.instance_type})" if cost else "n/a"


def _token_cost_rows(costs: tuple[TargetTokenCost, ...]) -> list[str]:
    lines = [
        "| target | runs on | $/1M output tokens there | cheapest on-demand | cheapest capacity block | "
        "meets criteria | acceptance basis |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cost in costs:
        meets = {True: "yes", False: "no", None: "n/a"}[cost.cheapest.meets_criteria]
        lines.append(
            f"| `{cost.target_id}` | {cost.runs_on} | **{_usd(cost.usd_per_million)}** | "
            f"{_cheapest(cost.cheapest.by_capacity_type['on-demand'])} | "
            f"{_cheapest(cost.cheapest.by_capacity_type['capacity-block'])} | {meets} | {cost.cheapest.basis} |"
        )
    return lines


def _trigger(spec: Mapping[str, Any], name: str) -> str:
    return next(str(t["metadata"]["threshold"]) for t in spec["triggers"] if t["name"] == name)


def _scaling(capacity: StackCapacity) -> list[str]:
    serving, cluster = capacity.serving_scaling, capacity.cluster_scaling
    lines: list[str] = []
    if serving is not None:
        how = "installed by the stack" if serving.install_keda else "already running on the cluster"
        lines += [
            f"KEDA {serving.keda.version} ({how}) scales each component through its scaling adapter, on the "
            "largest of: requests in flight per replica (the measured concurrency), queued requests per "
            "replica, TTFT p50 against the SLO. Pulumi ignores the replicas it owns.",
            "",
            "| ScaledObject | replicas | in flight / replica | queued / replica | TTFT p50 (s) |",
            "| --- | --- | --- | --- | --- |",
        ]
        for obj in serving.scaled_objects:
            spec = obj["spec"]
            lines.append(
                f"| `{obj['metadata']['name']}` | {spec['minReplicaCount']}..{spec['maxReplicaCount']} | "
                f"{_trigger(spec, 'inflight-per-replica')} | {_trigger(spec, 'queue-per-replica')} | "
                f"{_trigger(spec, 'ttft-p50-vs-slo')} |"
            )
        lines.append("")
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


def capacity_markdown(capacity: StackCapacity) -> str:
    lines: list[str] = []
    if capacity.token_costs:
        lines += [
            "## Cost per 1M output tokens",
            "",
            *_token_cost_rows(capacity.token_costs),
            "",
            "At the published output tok/s per GPU (scaled to `targets[].acceptanceLength` where set; the acceptance "
            "basis column says what each rests on), every replica set busy at its measured concurrency the whole "
            "hour: a floor (idle capacity and headroom cost the same per hour). The figure where the target "
            "runs is `usdPerMillionOutputTokens` in the outputs, its basis `throughputBasis`.",
            "",
        ]
    lines += _scaling(capacity)
    return "\n".join(lines)
