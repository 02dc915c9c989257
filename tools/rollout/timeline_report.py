"""The timeline part of the rollout section: time to the first token, the critical path with why each step
waits for the one before it (critical_path.py), the target of a stack that creates its cluster, a Mermaid
gantt and the per-endpoint table."""

from __future__ import annotations

from tools.rollout.critical_path import Hop, explain, target_lines
from tools.rollout.graph import StackGraph
from tools.rollout.rules import Rules
from tools.rollout.schedule import Step, Timeline

EKS_CLUSTER = "aws:eks/cluster:Cluster"


def minutes(value: float) -> str:
    return f"{value:.1f}"


def _clock(value: float) -> str:
    seconds = round(value * 60)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def label(step: Step) -> str:
    resource = step.resource
    return f"{resource.kind} {resource.object_name}" if resource.is_kubernetes_object else resource.type.split(":")[-1]


def _gantt(path: list[Step]) -> list[str]:
    lines = [
        "```mermaid",
        "gantt",
        "    title Critical path to the first served token (typical minutes)",
        "    dateFormat HH:mm:ss",
        "    axisFormat %H:%M",
    ]
    for index, step in enumerate(s for s in path if s.ready - s.start >= 0.05):
        start = max(step.start, step.ready - step.work.typical)
        name = f"{step.resource.name} ({label(step)})".replace(":", " ")
        lines.append(f"    {name} :s{index}, {_clock(start)}, {_clock(step.ready)}")
    return [*lines, "```"]


def _path_table(hops: list[Hop]) -> list[str]:
    lines = [
        "| step | resource | start | ready | min | waited for by `up` | waits for (why) | basis |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for hop in hops:
        step = hop.step
        waited = "yes" if step.awaited else "no"
        if step.wait is not None and step.wait.timeout_seconds is not None:
            waited = f"yes, {step.wait.timeout_seconds / 60:g} min max"
        why = f"{hop.after}: {'/'.join(dict.fromkeys(hop.kinds))}, {hop.why}" if hop.after else "-"
        basis = step.work.basis + (" (estimate)" if step.work.estimated and "estimate" not in step.work.basis else "")
        lines.append(
            f"| {label(step)} | {step.resource.name} | {minutes(step.start)} | {minutes(step.ready)} | "
            f"{minutes(step.work.typical)} | {waited} | {why} | {basis} |"
        )
    return lines


def timeline_section(
    graph: StackGraph,
    timeline: Timeline,
    rules: Rules,
    first: Step | None,
    dynamo: Step | None,
) -> list[str]:
    target = dynamo or first
    lines = ["### Timeline of a first `pulumi up` (typical durations)", ""]
    if target is None:
        done = minutes(timeline.up_minutes())
        return [*lines, f"No serving resource; `pulumi up` completes after about {done} min.", ""]
    hops = explain(graph, timeline, target.resource.key)
    path = [hop.step for hop in hops]
    slowest = sorted(path, key=lambda s: s.work.typical, reverse=True)[:3]

    def after(step: Step) -> str:
        return timeline.steps[step.gated_by].resource.name if step.gated_by else "nothing"

    creates_cluster = bool(graph.of_type(EKS_CLUSTER))
    if not creates_cluster:
        lines.append(
            "- The Kubernetes cluster is not created by this stack: its nodes, add-ons and any operator it "
            "already runs count as ready at minute 0."
        )
    if first:
        lines.append(
            f"- First served token: **{minutes(first.ready)} min** after `pulumi up` starts ({first.resource.name})."
        )
    if dynamo:
        lines.append(f"- First Dynamo graph serving: **{minutes(dynamo.ready)} min** ({dynamo.resource.name}).")
    lines += [
        f"- `pulumi up` itself completes after {minutes(timeline.up_minutes())} min; "
        f"every endpoint serves after {minutes(max(s.ready for s in timeline.serving()))} min.",
        "- Slowest steps on that path (each starts when the step named after it is done): "
        + "; ".join(f"{s.resource.name} {minutes(s.work.typical)} min (after {after(s)})" for s in slowest)
        + ".",
    ]
    if creates_cluster:
        goal = rules.durations["first_token_target_minutes"]
        estimated = [s for s in path if s.work.estimated and s.work.typical >= 0.5]
        lines += target_lines(hops, target.ready, float(goal["value"]), str(goal["basis"]).split(":")[0], estimated)
    lines += ["", *_gantt(path), "", *_path_table(hops), ""]
    lines.append(
        "Durations and their sources: tools/rollout/durations.yaml (numbers marked estimate there are not "
        "measured). "
        "Waits: readiness (its pods need it) and data (an input is built from its outputs) cannot overlap; "
        "dependsOn is an ordering the program declares."
    )
    serving = sorted(timeline.serving(), key=lambda s: s.ready)
    lines += ["", "| serving endpoint | ready after (min, typical) | worst case (min) |", "|---|---|---|"]
    lines += [f"| {s.resource.name} | {minutes(s.ready)} | {s.ready_worst:.0f} |" for s in serving]
    return [*lines, ""]
