"""The rollout model's answer for one stack: findings, the timeline of a first `up`, the destroy plan, and
the Markdown section for summary.md."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools.rollout.destroy import DELETED, DestroyRow, destroy_findings, destroy_plan
from tools.rollout.findings import Finding
from tools.rollout.graph import StackGraph
from tools.rollout.replacements import CREATE_FIRST, data_role, predict, replace_fields, replacement_findings
from tools.rollout.rules import Rules, load_rules
from tools.rollout.schedule import Step, Timeline
from tools.rollout.waits import wait_findings

DYNAMO_KIND = "DynamoGraphDeployment"
EKS_CLUSTER = "aws:eks/cluster:Cluster"


@dataclass(frozen=True)
class RolloutReport:
    graph: StackGraph
    rules: Rules
    timeline: Timeline
    destroy: list[DestroyRow]
    findings: list[Finding]

    @property
    def blocking(self) -> list[Finding]:
        return [f for f in self.findings if f.blocking]

    def first_token(self, dynamo_only: bool = False) -> Step | None:
        """The serving step that is ready first (with `dynamo_only`, among Dynamo graphs)."""
        steps = [s for s in self.timeline.serving() if not dynamo_only or s.resource.kind == DYNAMO_KIND]
        return min(steps, key=lambda s: (s.ready, s.resource.key), default=None)


def analyse(records: Iterable[Mapping[str, Any]], rules: Rules | None = None) -> RolloutReport:
    """Run the model on resources.json records (RecordedResource.to_json() dicts)."""
    rules = rules or load_rules()
    graph = StackGraph(records)
    timeline = Timeline(graph, rules)
    rows = destroy_plan(graph, rules)
    findings = wait_findings(graph, timeline, rules) + replacement_findings(graph, rules) + destroy_findings(graph, rows, rules)
    return RolloutReport(graph, rules, timeline, rows, sorted(findings, key=lambda f: (not f.blocking, f.category, f.resource)))


def _minutes(value: float) -> str:
    return f"{value:.1f}"


def _clock(minutes: float) -> str:
    seconds = round(minutes * 60)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _label(step: Step) -> str:
    resource = step.resource
    return f"{resource.kind} {resource.object_name}" if resource.is_kubernetes_object else resource.type.split(":")[-1]


def _gantt(path: list[Step]) -> list[str]:
    lines = ["```mermaid", "gantt", "    title Critical path to the first served token (typical minutes)",
             "    dateFormat HH:mm:ss", "    axisFormat %H:%M"]
    for index, step in enumerate(s for s in path if s.ready - s.start >= 0.05):
        start = max(step.start, step.ready - step.work.typical)
        name = f"{step.resource.name} ({_label(step)})".replace(":", " ")
        lines.append(f"    {name} :s{index}, {_clock(start)}, {_clock(step.ready)}")
    return lines + ["```"]


def _timeline_section(report: RolloutReport) -> list[str]:
    timeline = report.timeline
    first = report.first_token()
    dynamo = report.first_token(dynamo_only=True)
    target = dynamo or first
    lines = ["### Timeline of a first `pulumi up` (typical durations)", ""]
    if target is None:
        return lines + [f"No serving resource; `pulumi up` completes after about {_minutes(timeline.up_minutes())} min.", ""]
    path = timeline.path_to(target.resource.key)
    slowest = sorted(path, key=lambda s: s.work.typical, reverse=True)[:3]

    def after(step: Step) -> str:
        return timeline.steps[step.gated_by].resource.name if step.gated_by else "nothing"

    if not report.graph.of_type(EKS_CLUSTER):
        lines.append("- The Kubernetes cluster is not created by this stack: its nodes, add-ons and any operator it "
                     "already runs count as ready at minute 0.")
    if first:
        lines.append(f"- First served token: **{_minutes(first.ready)} min** after `pulumi up` starts ({first.resource.name}).")
    if dynamo:
        lines.append(f"- First Dynamo graph serving: **{_minutes(dynamo.ready)} min** ({dynamo.resource.name}).")
    lines += [
        f"- `pulumi up` itself completes after {_minutes(timeline.up_minutes())} min; "
        f"every endpoint serves after {_minutes(max(s.ready for s in timeline.serving()))} min.",
        "- Slowest steps on that path (each starts when the step named after it is done): "
        + "; ".join(f"{s.resource.name} {_minutes(s.work.typical)} min (after {after(s)})" for s in slowest) + ".",
        "",
    ]
    lines += _gantt(path) + [""]
    lines += ["| step | resource | start | ready | min | waited for by `up` | basis |", "|---|---|---|---|---|---|---|"]
    for step in path:
        waited = "yes" if step.awaited else "no"
        if step.wait is not None and step.wait.timeout_seconds is not None:
            waited = f"yes, {step.wait.timeout_seconds / 60:g} min max"
        lines.append(f"| {_label(step)} | {step.resource.name} | {_minutes(step.start)} | {_minutes(step.ready)} | "
                     f"{_minutes(step.work.typical)} | {waited} | {step.work.basis} |")
    lines.append("")
    lines.append("Durations and their sources: tools/rollout/durations.yaml (numbers marked estimate there are not measured).")
    serving = sorted(timeline.serving(), key=lambda s: s.ready)
    lines += ["", "| serving endpoint | ready after (min, typical) | worst case (min) |", "|---|---|---|"]
    lines += [f"| {s.resource.name} | {_minutes(s.ready)} | {s.ready_worst:.0f} |" for s in serving]
    return lines + [""]


def _destroy_section(report: RolloutReport) -> list[str]:
    """Data resources one per row; other resources with the same fate grouped."""
    rows = report.destroy
    lines = ["### `pulumi destroy`", "", "| resource | type | holds | on destroy |", "|---|---|---|---|"]
    for row in sorted((r for r in rows if r.data_role), key=lambda r: r.resource.name):
        lines.append(f"| **{row.resource.name}** | {row.resource.type} | {row.data_role} | {row.outcome}: {row.how} |")
    groups: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        if not row.data_role:
            groups.setdefault((row.outcome, row.how), []).append(row.resource.name)
    for (outcome, how), names in sorted(groups.items(), key=lambda item: (item[0][0] == DELETED, item[0])):
        if (outcome, how) == (DELETED, "deleted"):
            continue
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        lines.append(f"| {shown} | {len(names)} resource(s) | - | {outcome}: {how} |")
    deleted = len(groups.get((DELETED, "deleted"), []))
    return lines + ["", f"Every other resource ({deleted}) is deleted.", ""]


def _readers(report: RolloutReport) -> dict[str, list[str]]:
    """Secret/ConfigMap key -> workloads whose pods read it (they keep old values when it is replaced)."""
    readers: dict[str, list[str]] = {}
    for step in report.timeline.steps.values():
        for need in step.prerequisites:
            target = report.graph.get(need.key)
            if target is not None and target.kind in report.rules.restart_needed_on_replace:
                readers.setdefault(target.key, []).append(step.resource.name)
    return readers


def _replacement_section(report: RolloutReport) -> list[str]:
    lines = ["### Replacements (a change to a replace-forcing input)", "",
             "| resource | replaced when these change | how | note |", "|---|---|---|---|"]
    readers = _readers(report)
    for resource in report.graph:
        fields = replace_fields(resource, report.rules)
        if not fields or not resource.custom:
            continue
        outcome = predict(report.graph, resource, report.rules, fields[-1])
        notable = resource.protect or data_role(resource, report.rules) or resource.delete_before_replace or any(
            predict(report.graph, resource, report.rules, f).collides for f in fields) or resource.key in readers
        if not notable:
            continue
        notes = []
        if resource.key in readers:
            notes.append(f"running pods of {', '.join(sorted(set(readers[resource.key])))} keep the old values until restarted")
        if any((p := predict(report.graph, resource, report.rules, f)).collides for f in fields):
            notes.append(f"collides: {p.collision}")
        if resource.protect:
            notes.append("refused: protected")
        aws = report.rules.aws_types.get(resource.type)
        if aws and aws.replace_note and outcome.strategy == CREATE_FIRST:
            notes.append(aws.replace_note)
        if outcome.cascade:
            notes.append("also replaces " + ", ".join(outcome.cascade))
        lines.append(f"| {resource.name} | {', '.join(fields)} | {outcome.strategy} | {'; '.join(notes) or '-'} |")
    return lines + [""]


def markdown(report: RolloutReport) -> str:
    """The rollout section of summary.md."""
    lines = ["## Rollout: first `up`, updates, `destroy` (modelled)", "",
             "From the engine's and providers' rules (tools/rollout/provider_rules.yaml) and typical durations "
             "(tools/rollout/durations.yaml), applied to the recorded resources; see docs/rollout.md.", ""]
    blocking = report.blocking
    lines += [f"**{len(blocking)} blocking finding(s)** (the render fails on these), "
              f"{len(report.findings) - len(blocking)} warning(s).", ""]
    lines += [f"- {f.line()}" for f in report.findings] + ([""] if report.findings else [])
    lines += _timeline_section(report) + _destroy_section(report) + _replacement_section(report)
    return "\n".join(lines).rstrip() + "\n"
