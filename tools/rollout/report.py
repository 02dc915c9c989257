"""The rollout model's answer for one stack: findings, the timeline of a first `up`, the destroy plan, and
the Markdown section for summary.md."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools.rollout.cold_start import cold_start_section
from tools.rollout.destroy import DELETED, DestroyRow, destroy_findings, destroy_plan
from tools.rollout.findings import RESTART, SERVE, WAIT, Finding
from tools.rollout.graph import Resource, StackGraph, lookup
from tools.rollout.node_rolls import pool_roll_guide
from tools.rollout.replacements import CREATE_FIRST, data_role, predict, replace_fields, replacement_findings
from tools.rollout.rules import Rules, load_engine_confirmed, load_rules
from tools.rollout.schedule import DYNAMO_KIND, Step, Timeline
from tools.rollout.volumes import binding, rebind_note
from tools.rollout.workloads import PULLS_IMAGES

EKS_CLUSTER = "aws:eks/cluster:Cluster"


def _describe(step: Step) -> str:
    resource = step.resource
    if resource.is_kubernetes_object:
        where = f"{resource.namespace}/" if resource.namespace else ""
        return f"{resource.kind} {where}{resource.object_name}"
    return resource.type


def _timeout_minutes(step: Step) -> float:
    assert step.wait is not None
    assert step.wait.timeout_seconds is not None
    return step.wait.timeout_seconds / 60


def _work_too_long(graph: StackGraph, step: Step, rules: Rules) -> Finding | None:
    wait = step.wait
    if wait is None or not wait.awaited:
        return None
    resource, timeout = step.resource, _timeout_minutes(step)
    if resource.kind == "PersistentVolumeClaim":
        return _claim_cannot_bind(graph, step, rules)
    if step.work.max <= timeout:
        return None
    why = (
        f"{_describe(step)}: `up` waits {timeout:g} min ({wait.timeout_basis}, {wait.source}) for "
        f'"{wait.ready_when}", but that can take {step.work.max:.0f} min ({step.work.worst_basis})'
    )
    return Finding(WAIT, resource.name, why, True)


def _claim_cannot_bind(graph: StackGraph, step: Step, rules: Rules) -> Finding | None:
    """A claim `up` waits for (hard-coded 5 min) whose volume cannot be there in time, or ever."""
    resource, timeout, wait = step.resource, _timeout_minutes(step), step.wait
    assert wait is not None
    bound = binding(graph, resource, rules)
    waits = f"`up` waits at most {timeout:g} min for Bound ({wait.timeout_basis}, {wait.source})"
    if bound.volume is not None and bound.mismatch:
        why = (
            f"{_describe(step)}: {waits}, but PersistentVolume {bound.volume.object_name} ({bound.volume.name}) can "
            f"never bind it: {bound.mismatch} (k8s-pv-controller); the claim stays Pending"
        )
        return Finding(WAIT, resource.name, why, True)
    if bound.mode in ("static", "WaitForFirstConsumer") or bound.span.max <= timeout:
        return None
    why = (
        f"{_describe(step)}: {waits} but its {bound.mode or 'unknown'}-binding class provisions the volume in up to "
        f"{bound.span.max:g} min: create the volume in the stack and bind the claim to it, annotate the claim "
        f'pulumi.com/skipAwait: "true", or bind WaitForFirstConsumer'
    )
    return Finding(WAIT, resource.name, why, True)


def _unordered_prerequisites(graph: StackGraph, timeline: Timeline, step: Step) -> list[Finding]:
    wait = step.wait
    if wait is None or not wait.awaited:
        return []
    deadline = step.start_worst + _timeout_minutes(step)
    findings = []
    for need in step.prerequisites:
        if not need.key:
            continue
        other = timeline.steps[need.key]
        ordered = graph.ordered_before(need.key, step.resource.key)
        if (ordered and other.settled) or other.ready_worst <= deadline:
            continue
        relation = (
            f"depends on {other.resource.name}, which `up` does not wait for"
            if ordered
            else f"does not depend on {other.resource.name}"
        )
        why = (
            f"{_describe(step)} {need.reason}, but {relation} ({other.resource.type}): "
            f"`up` gives up after {_timeout_minutes(step):g} min ({wait.timeout_basis}) while {other.resource.name} "
            f"can take until minute {other.ready_worst:.0f}; add it to dependsOn (or skip the await with a reason)"
        )
        findings.append(Finding(WAIT, step.resource.name, why, True))
    return findings


def _missing(step: Step) -> list[Finding]:
    return [
        Finding(
            WAIT,
            step.resource.name,
            f"{_describe(step)} {need.reason}, which nothing in the stack creates; {need.absent_because}, so "
            f"{need.missing} cannot exist before `up`: it never becomes ready",
            True,
        )
        for need in step.prerequisites
        if need.missing
    ]


def _unawaited_serving(step: Step) -> Finding | None:
    if step.awaited:
        return None
    why = (
        f"`up` does not wait for {_describe(step)}, so it succeeds and publishes the endpoint even if no worker ever "
        f"starts: annotate pulumi.com/waitFor (a Ready condition) and pulumi.com/timeoutSeconds >= "
        f"{step.work.max * 60:.0f} ({step.work.worst_basis})"
    )
    return Finding(SERVE, step.resource.name, why, False)


def wait_findings(graph: StackGraph, timeline: Timeline, rules: Rules) -> list[Finding]:
    """Waits that can expire before what they wait for is done (blocking), and successes that come before serving.

    Three checks on the timeline:
    - a wait shorter than the work it waits for (a claim's hard-coded bind wait against the provisioning of its
      volume, or a static volume that can never bind it, a Job's timeout against its own activeDeadlineSeconds,
      a Helm timeout against the chart's install, a graph's waitFor timeout against its workers' startup budget);
    - a readiness prerequisite the resource is not ordered after (not among its transitive dependencies, or
      among them but not awaited) that can, in the worst case, finish after the wait has expired;
    - a prerequisite the stack never creates, in a namespace this stack creates (so it cannot exist yet).
    And one warning: a serving resource `up` does not wait for at all."""
    findings: list[Finding] = []
    serving = {s.resource.key for s in timeline.serving()}
    for step in timeline.steps.values():
        if (too_long := _work_too_long(graph, step, rules)) is not None:
            findings.append(too_long)
        findings += _unordered_prerequisites(graph, timeline, step)
        findings += _missing(step)
        if step.resource.key in serving and step.resource.is_kubernetes_object and (idle := _unawaited_serving(step)):
            findings.append(idle)
    return sorted(set(findings))


TEMPLATE_METADATA = {DYNAMO_KIND: "spec.components[].podTemplate.metadata"}
DEFAULT_TEMPLATE_METADATA = "spec.template.metadata"


@dataclass(frozen=True)
class Reader:
    """A workload whose pods read a Secret/ConfigMap, and whether its pods roll when that content changes."""

    workload: Resource
    rolls_by: str  # the checksum annotation that rolls its pods ("" when nothing does)


def checksum_annotation(workload: Resource, rules: Rules) -> str:
    """The pod template annotation that changes with the config content ("" when every template lacks one)."""
    path = TEMPLATE_METADATA.get(workload.kind, DEFAULT_TEMPLATE_METADATA)
    found = lookup(workload.inputs, path)
    templates = found if isinstance(found, list) else [found] if found else []
    markers = rules.restart_annotation_markers
    keys = [
        sorted(key for key in (template.get("annotations") or {}) if any(m in key for m in markers))
        for template in templates
        if isinstance(template, dict)
    ]
    return keys[0][0] if keys and all(keys) else ""


def readers(graph: StackGraph, timeline: Timeline, rules: Rules) -> dict[str, list[Reader]]:
    """Secret/ConfigMap key -> the workloads whose pods read it at run time."""
    found: dict[str, list[Reader]] = {}
    for step in timeline.steps.values():
        for need in step.prerequisites:
            target = graph.get(need.key)
            if target is None or target.kind not in rules.restart_needed_on_replace:
                continue
            if need.reason.startswith(PULLS_IMAGES):
                continue
            found.setdefault(target.key, []).append(Reader(step.resource, checksum_annotation(step.resource, rules)))
    return found


def restart_findings(graph: StackGraph, timeline: Timeline, rules: Rules) -> list[Finding]:
    """A long-running workload that keeps old values when a Secret or ConfigMap it reads is replaced (a warning).

    A content change replaces the object under the same name (provider_rules.yaml `replacements`), and nothing
    restarts the pods that read it: a long-running workload keeps what it read at start until its pod template
    changes. The usual remedy is a checksum of the content in a pod template annotation (helm-checksum), which
    changes the template with the content. The model cannot recompute the program's checksum, so any pod template
    annotation whose key contains a marker of `restart_annotations` counts as one. Image pull Secrets are not
    "read": a new one applies to the next pull."""
    findings = {
        Finding(
            RESTART,
            reader.workload.name,
            f"reads {graph.resources[key].kind} {graph.resources[key].object_name}, which a content change replaces "
            f"under the same name, but no pod template annotation changes with it: running pods keep the old values "
            f"until restarted; add a checksum of the content as a pod template annotation (helm-checksum)",
            False,
        )
        for key, workloads in readers(graph, timeline, rules).items()
        for reader in workloads
        if not reader.rolls_by and reader.workload.kind in rules.long_running_kinds
    }
    return sorted(findings)


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
    findings = (
        wait_findings(graph, timeline, rules)
        + replacement_findings(graph, rules)
        + destroy_findings(graph, rows, rules)
        + restart_findings(graph, timeline, rules)
    )
    ordered = sorted(findings, key=lambda f: (not f.blocking, f.category, f.resource))
    return RolloutReport(graph, rules, timeline, rows, ordered)


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
    return [*lines, "", f"Every other resource ({deleted}) is deleted.", ""]


def _reader_notes(found: list[Reader]) -> list[str]:
    kept = sorted({r.workload.name for r in found if not r.rolls_by})
    rolled = sorted({f"{r.workload.name} ({r.rolls_by})" for r in found if r.rolls_by})
    notes = [f"running pods of {', '.join(kept)} keep the old values until restarted"] if kept else []
    return notes + ([f"pods of {', '.join(rolled)} roll: the annotation changes with the content"] if rolled else [])


def _replacement_section(report: RolloutReport) -> list[str]:
    lines = [
        "### Replacements (a change to a replace-forcing input)",
        "",
        "| resource | replaced when these change | how | note |",
        "|---|---|---|---|",
    ]
    readers_of = readers(report.graph, report.timeline, report.rules)
    for resource in report.graph:
        fields = replace_fields(resource, report.rules)
        if not fields or not resource.custom:
            continue
        outcome = predict(report.graph, resource, report.rules, fields[-1])
        colliding = [p for f in fields if (p := predict(report.graph, resource, report.rules, f)).collides]
        flagged = resource.protect or resource.delete_before_replace or resource.key in readers_of or colliding
        if not (flagged or data_role(resource, report.rules)):
            continue
        notes = _reader_notes(readers_of[resource.key]) if resource.key in readers_of else []
        if colliding:
            notes.append(f"collides: {colliding[0].collision}")
        if resource.protect:
            notes.append("refused: protected")
        aws = report.rules.aws_types.get(resource.type)
        if aws and aws.replace_note and outcome.strategy == CREATE_FIRST:
            notes.append(aws.replace_note)
        if outcome.cascade:
            notes.append("also replaces " + ", ".join(outcome.cascade))
        if resource.kind == "PersistentVolumeClaim" and (rebind := rebind_note(report.graph, resource, report.rules)):
            notes.append(rebind)
        lines.append(f"| {resource.name} | {', '.join(fields)} | {outcome.strategy} | {'; '.join(notes) or '-'} |")
    return [*lines, ""]


def markdown(report: RolloutReport) -> str:
    """The cold-start and rollout sections of summary.md."""
    lines = cold_start_section(report.graph, report.timeline, report.rules)
    lines += [
        "## Rollout: first `up`, updates, `destroy` (modelled)",
        "",
        "From the engine's and providers' rules (tools/rollout/provider_rules.yaml) and the durations table "
        "(catalog/durations.yaml), applied to the recorded resources; see docs/rollout.md.",
        "",
    ]
    blocking = report.blocking
    lines += [
        f"**{len(blocking)} blocking finding(s)** (the render fails on these), "
        f"{len(report.findings) - len(blocking)} warning(s).",
        "",
    ]
    lines += [f"- {f.line()}" for f in report.findings] + ([""] if report.findings else [])
    lines += _up_section(report) + _destroy_section(report) + _replacement_section(report)
    lines += pool_roll_guide(report.graph, report.rules) + _engine_section()
    return "\n".join(lines).rstrip() + "\n"


def _up_section(report: RolloutReport) -> list[str]:
    """When `pulumi up` itself completes and when each endpoint serves (the critical paths are in summary.md's
    cold-start section)."""
    timeline = report.timeline
    lines = ["### First `pulumi up` (typical durations, catalog/durations.yaml)", ""]
    if not report.graph.of_type(EKS_CLUSTER):
        lines += [
            "The Kubernetes cluster is not created by this stack: its nodes, add-ons and any operator it already "
            "runs count as ready at minute 0.",
            "",
        ]
    serving = sorted(timeline.serving(), key=lambda s: (s.ready, s.resource.key))
    lines.append(f"`pulumi up` itself completes after {timeline.up_minutes():.1f} min.")
    if not serving:
        return [*lines, ""]
    lines += ["", "| serving endpoint | ready after (min, typical) | worst case (min) |", "|---|---|---|"]
    lines += [f"| {s.resource.name} | {s.ready:.1f} | {s.ready_worst:.0f} |" for s in serving]
    return [*lines, ""]


def _engine_section() -> list[str]:
    """Which of the model's rules the real engine confirmed (`make e2e`, tools/rollout/engine_confirmed.yaml)."""
    engine, confirmed = load_engine_confirmed()
    versions = ", ".join(f"{name} {version}" for name, version in engine.items())
    return [
        "### Rules the real engine confirmed",
        "",
        f"`make e2e` runs these against the real engine ({versions}; docs/e2e.md); the rest of the model rests "
        "on the provider sources it cites.",
        "",
        "| rule | scenario (tests/e2e/test_engine_scenarios.py) |",
        "|---|---|",
        *[f"| {c['rule']} | `{c['scenario']}` |" for c in confirmed],
        "",
    ]
