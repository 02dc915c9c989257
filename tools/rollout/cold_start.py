"""The three critical paths of a cold start, step by step, each step with its kind and source (the durations
table, catalog/durations.yaml), overlaps laid out as they happen, a Mermaid gantt beside each table, and the
three lines summary.md ends the section with:

    First Dynamo token: N min        after `pulumi up` starts (the first-`up` timeline, schedule.py)
    New GPU node serving: N min      after a scale-up, the model cache and the compile cache warm
    SageMaker first token: N min     after `pulumi up` starts

Each path is checked against its goal (the table's `goals`). A goal counts as met only when it holds with every
estimate on the path at its worst: a goal met only through an unsourced estimate does not count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from serving_stack.facts.durations import Goal, GoalName, Kind
from tools.rollout.durations import (
    AUTOSCALER,
    GPU_NODE_BOOT,
    SAGEMAKER_ENDPOINT,
    Node,
    Par,
    Part,
    Placed,
    Seq,
    compilation_cache_shared,
    layout,
    prewarm_part,
    sagemaker_node,
    serving_parts,
)
from tools.rollout.graph import HELM_RELEASE, Resource, StackGraph
from tools.rollout.rules import Rules
from tools.rollout.schedule import DYNAMO_KIND, Step, Timeline
from tools.rollout.workloads import (
    gpu_node_groups,
    image_delivery,
    node_groups_of,
    pool_name,
    prepull_daemon_sets,
    prewarm_daemon_sets,
)

AUTOSCALER_CHART = "cluster-autoscaler"
LINES: dict[GoalName, str] = {
    "first-dynamo-token": "First Dynamo token",
    "new-gpu-node": "New GPU node serving",
    "sagemaker-first-token": "SageMaker first token",
}


@dataclass(frozen=True)
class Row:
    """One step of a path (seconds from the path's origin); `slack`: how much longer its worst case is."""

    step: str
    start: float
    end: float
    kind: Kind
    source: str
    critical: bool
    slack: float = 0.0
    after: str = ""


@dataclass(frozen=True)
class CriticalPath:
    title: str  # the line's label
    origin: str  # what minute 0 is
    rows: tuple[Row, ...]
    goal: Goal

    @property
    def minutes(self) -> float:
        return max((r.end for r in self.rows if r.critical), default=0.0) / 60

    @property
    def estimates(self) -> list[Row]:
        return [r for r in self.rows if r.critical and r.kind == "estimate" and r.end > r.start]

    def verdict(self) -> str:
        goal, minutes = self.goal.minutes, self.minutes
        if minutes > goal:
            blocking = sorted((r for r in self.rows if r.critical), key=lambda r: r.end - r.start, reverse=True)[:3]
            return (
                f"**not met**: {minutes:.1f} min against {goal:g} min. The longest steps on this path: "
                + "; ".join(f"{r.step} {(r.end - r.start) / 60:.1f} min ({r.kind})" for r in blocking)
                + "."
            )
        worst = minutes + sum(r.slack for r in self.estimates) / 60
        if self.estimates and worst > goal:
            return (
                f"met only through estimates, which does not count: {minutes:.1f} min against {goal:g} min, but "
                f"{worst:.1f} min with the estimates on the path at their worst ("
                + "; ".join(r.step for r in self.estimates)
                + ")."
            )
        return f"**met**: {minutes:.1f} min against {goal:g} min, with every estimate on the path at its worst."

    def line(self) -> str:
        return f"{self.title}: {self.minutes:.1f} min"


def _row(placed: Placed, after: str = "", of: str = "") -> Row:
    part = placed.part
    return Row(
        f"{of}: {part.name}" if of else part.name,
        placed.start,
        placed.end,
        part.kind,
        part.source,
        placed.critical,
        part.worst_seconds - part.seconds,
        after,
    )


def _label(step: Step) -> str:
    resource = step.resource
    what = f"{resource.kind} {resource.object_name}" if resource.is_kubernetes_object else resource.type.split(":")[-1]
    return f"{what} ({resource.name})"


@dataclass(frozen=True)
class Hop:
    """A displayed step of the critical path and why it starts (or becomes ready) after `after`."""

    step: Step
    after: str  # the previous displayed step's resource name ("" for the first)
    kinds: tuple[str, ...]  # edge kinds along the way (components and providers in between)
    why: str


def _edge(graph: StackGraph, step: Step, gate: str) -> tuple[str, str]:
    """The kind of the edge from `step` to the key it waited for, and a phrase saying why: `readiness` (the
    step's pods need the other resource: a prerequisite read from the pod specs or the operator), `data` (an input
    is built from the other's outputs), `dependsOn` (an ordering the program declares; the model cannot see why),
    `provider` (deployed through a provider that waits for it), `parent` (a child of a component that depends on
    it). Data and readiness edges cannot be overlapped; a declared ordering is the program's choice, so those are
    the places to look for a shorter path."""
    resource, other = step.resource, graph.resources[gate]
    for need in step.prerequisites:
        if need.key == gate:
            return "readiness", need.reason
    props = sorted(prop for prop, deps in resource.property_dependencies.items() if gate in deps)
    if props:
        return "data", f"its input {', '.join(props)} is built from {other.name}'s outputs"
    if gate in resource.depends_on:
        return "dependsOn", f"dependsOn {other.name}"
    if gate == resource.provider:
        return "provider", f"it is deployed through provider {other.name}"
    return "parent", f"it is a child of component {other.name}"


def explain(graph: StackGraph, timeline: Timeline, key: str) -> list[Hop]:
    """The critical path to `key` (first step first), each step with why it waits for the one before."""
    hops: list[Hop] = []
    for step in timeline.path_to(key):
        kinds: list[str] = []
        phrases: list[str] = []
        current, after = step, ""
        while current.gated_by and current.gated_by != current.resource.key:
            kind, why = _edge(graph, current, current.gated_by)
            kinds.append(kind)
            phrases.append(why)
            current = timeline.steps[current.gated_by]
            if current.resource.custom and not current.resource.is_provider:
                after = current.resource.name
                break
        hops.append(Hop(step, after, tuple(kinds), ", which ".join(phrases) if after else "nothing before it"))
    return hops


def _timeline_rows(graph: StackGraph, timeline: Timeline, key: str) -> list[Row]:
    """The steps that decided when `key` was ready, first step first; a serving resource as its own steps."""
    rows: list[Row] = []
    for hop in explain(graph, timeline, key):
        step = hop.step
        after = f"after {hop.after}: {'/'.join(dict.fromkeys(hop.kinds))}, {hop.why}" if hop.after else ""
        if step.parts:
            first = next((p for p in step.parts if p.critical), step.parts[0])
            rows += [_row(placed, after if placed is first else "", step.resource.name) for placed in step.parts]
            continue
        if step.work.typical <= 0:
            continue
        end = step.ready * 60
        rows.append(
            Row(
                _label(step),
                end - step.work.typical * 60,
                end,
                step.work.kind,
                step.work.basis,
                True,
                (step.work.max - step.work.typical) * 60 if step.work.kind == "estimate" else 0.0,
                after,
            )
        )
    return rows


def _first_token(
    graph: StackGraph, timeline: Timeline, rules: Rules, goal: GoalName, steps: list[Step], what: str
) -> CriticalPath | None:
    """From `pulumi up`'s start to the first of `steps` serving."""
    if not steps:
        return None
    first = min(steps, key=lambda s: (s.ready, s.resource.key))
    return CriticalPath(
        LINES[goal],
        f"`pulumi up` starts; {what} {first.resource.name}",
        tuple(_timeline_rows(graph, timeline, first.resource.key)),
        rules.durations.goals[goal],
    )


def first_dynamo_token(graph: StackGraph, timeline: Timeline, rules: Rules) -> CriticalPath | None:
    steps = [s for s in timeline.serving() if s.resource.kind == DYNAMO_KIND]
    return _first_token(graph, timeline, rules, "first-dynamo-token", steps, "the first Dynamo graph to serve is")


def sagemaker_first_token(graph: StackGraph, timeline: Timeline, rules: Rules) -> CriticalPath | None:
    steps = [s for s in timeline.serving() if s.resource.type == SAGEMAKER_ENDPOINT]
    return _first_token(graph, timeline, rules, "sagemaker-first-token", steps, "the endpoint is")


def _autoscaled(graph: StackGraph) -> bool:
    return any(AUTOSCALER_CHART in str(r.inputs.get("chart", "")) for r in graph.of_type(HELM_RELEASE))


def new_node_path(graph: StackGraph, rules: Rules, group: Resource, graph_resource: Resource) -> Node:
    """A node of `group` added by a scale-up, serving `graph_resource`'s workers: the model cache holds the
    checkpoints (the download ran long ago) and the compile cache holds the artifacts, if the graph shares one."""
    table = rules.durations
    parts = serving_parts(graph, graph_resource, rules, cache_warm=compilation_cache_shared(graph_resource))
    pull = [parts.pull] if parts.pull else []
    # A pre-pull DaemonSet pulls the image from the node's registration, beside the device plugins.
    pre_pulled = bool(prepull_daemon_sets(graph, graph_resource, rules))
    to_pod: Node = Par((parts.plugins, *pull)) if pre_pulled else Seq((parts.plugins, *pull))
    prewarm = [prewarm_part(graph, ds, rules, 1) for ds in prewarm_daemon_sets(graph, graph_resource, rules)]
    ready: Node = Par((to_pod, *prewarm[:1])) if parts.gated and prewarm else to_pod
    start = (
        [Part.of("cluster-autoscaler notices the pending pod", table.steps[AUTOSCALER])] if _autoscaled(graph) else []
    )
    boot = Part.of("GPU instance launch to kubelet registration", table.steps[GPU_NODE_BOOT])
    return Seq((*start, boot, ready, parts.load, parts.engine))


@dataclass(frozen=True)
class PoolReadiness:
    pool: str
    graph: str
    delivery: str
    compile_cache: bool
    path: CriticalPath


def new_gpu_nodes(graph: StackGraph, rules: Rules) -> list[PoolReadiness]:
    """Per GPU node group of the stack: the slowest of its Dynamo graphs to serve on a new node."""
    found = []
    for group in gpu_node_groups(graph, rules):
        graphs = [r for r in graph.kubernetes_objects(DYNAMO_KIND) if group in node_groups_of(graph, r, rules)]
        paths = [(layout(new_node_path(graph, rules, group, r)), r) for r in graphs]
        if not paths:
            continue
        laid, slowest = max(paths, key=lambda p: (p[0].end, p[1].key))
        origin = "the scale-up: a worker pod is pending" if _autoscaled(graph) else "the node group's size is raised"
        found.append(
            PoolReadiness(
                pool_name(group),
                slowest.name,
                image_delivery(graph, group),
                compilation_cache_shared(slowest),
                CriticalPath(
                    LINES["new-gpu-node"],
                    f"{origin} (pool {pool_name(group)}, {slowest.name})",
                    tuple(_row(p) for p in laid.placed),
                    rules.durations.goals["new-gpu-node"],
                ),
            )
        )
    return found


def _clock(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _gantt(path: CriticalPath) -> list[str]:
    lines = [
        "```mermaid",
        "gantt",
        f"    title {path.title} (typical)",
        "    dateFormat HH:mm:ss",
        "    axisFormat %H:%M",
    ]
    for index, row in enumerate(r for r in path.rows if r.end - r.start >= 1):
        name = row.step.replace(": ", " - ").replace(":", " ").replace("#", " ")
        tag = "crit, " if row.critical else ""
        lines.append(f"    {name} :{tag}s{index}, {_clock(row.start)}, {_clock(row.end)}")
    return [*lines, "```"]


def _table(path: CriticalPath, with_after: bool) -> list[str]:
    head = "| step | start (min) | end (min) | min | on the path | kind | source |"
    lines = [head + (" waits for |" if with_after else ""), "|---" * (7 + with_after) + "|"]
    for row in path.rows:
        on_path = "yes" if row.critical else "no (overlaps)"
        cells = [
            row.step,
            f"{row.start / 60:.1f}",
            f"{row.end / 60:.1f}",
            f"{(row.end - row.start) / 60:.1f}",
            on_path,
            f"**{row.kind}**" if row.kind == "estimate" else row.kind,
            row.source.replace("|", "/"),
        ]
        if with_after:
            cells.append(row.after or "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _path_section(heading: str, path: CriticalPath, with_after: bool = False) -> list[str]:
    return [
        f"### {heading}",
        "",
        f"From {path.origin}. Goal ({path.goal.source.split(':')[0]}): {path.verdict()}",
        "",
        *_gantt(path),
        "",
        *_table(path, with_after),
        "",
    ]


def cold_start_section(graph: StackGraph, timeline: Timeline, rules: Rules) -> list[str]:
    lines = [
        "## Cold start: three critical paths",
        "",
        "Each step with its kind (measured, derived, **estimate**) and source, from catalog/durations.yaml "
        '(docs/cold-start.md). Steps that overlap run in parallel; the longest decides ("on the path").',
        "",
    ]
    first = first_dynamo_token(graph, timeline, rules)
    if first:
        lines += _path_section("First Dynamo token after `pulumi up` starts", first, with_after=True)
    pools = new_gpu_nodes(graph, rules)
    if pools:
        lines += [
            "| pool | slowest graph | image delivery | compile cache | new node serving (min) |",
            "|---|---|---|---|---|",
            *(
                f"| `{p.pool}` | {p.graph} | {p.delivery} | {'shared (warm)' if p.compile_cache else 'per pod (cold)'} "
                f"| {p.path.minutes:.1f} |"
                for p in pools
            ),
            "",
        ]
        slowest = max(pools, key=lambda p: p.path.minutes)
        lines += _path_section("New GPU node serving after a scale-up (slowest pool)", slowest.path)
    sagemaker = sagemaker_first_token(graph, timeline, rules)
    if sagemaker:
        lines += _path_section("SageMaker first token after `pulumi up` starts", sagemaker)
        endpoint = min(
            (s for s in timeline.serving() if s.resource.type == SAGEMAKER_ENDPOINT), key=lambda s: s.resource.key
        )
        cached = layout(sagemaker_node(graph, endpoint.resource, rules, image_cached=True)).end / 60
        lines += [
            f"A scale-out instance of the same endpoint serves {cached:.1f} min after its launch: SageMaker's "
            "container caching has the image on it (catalog/durations.yaml, sagemaker-image-pull-cached).",
            "",
        ]
    lines += _summary_lines(first, pools, sagemaker)
    return lines


def _summary_lines(
    first: CriticalPath | None, pools: Iterable[PoolReadiness], sagemaker: CriticalPath | None
) -> list[str]:
    slowest = max(pools, key=lambda p: p.path.minutes, default=None)
    return [
        first.line() if first else f"{LINES['first-dynamo-token']}: n/a (no Dynamo graph)",
        "",
        slowest.path.line() if slowest else f"{LINES['new-gpu-node']}: n/a (no GPU node group in the stack)",
        "",
        sagemaker.line() if sagemaker else f"{LINES['sagemaker-first-token']}: n/a (no SageMaker endpoint)",
        "",
    ]
