"""The rollout model's answer for one stack: findings, the timeline of a first `up`, the destroy plan, and
the Markdown section for summary.md."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools.rollout.cold_start import cold_start_section
from tools.rollout.destroy import DELETED, DestroyRow, destroy_findings, destroy_plan
from tools.rollout.findings import Finding
from tools.rollout.graph import StackGraph
from tools.rollout.node_rolls import pool_roll_guide
from tools.rollout.replacements import CREATE_FIRST, data_role, predict, replace_fields, replacement_findings
from tools.rollout.restarts import Reader, restart_findings
from tools.rollout.restarts import readers as restart_readers
from tools.rollout.rules import Rules, load_engine_confirmed, load_rules
from tools.rollout.schedule import Step, Timeline
from tools.rollout.volumes import rebind_note
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


def _reader_notes(readers: list[Reader]) -> list[str]:
    kept = sorted({r.workload.name for r in readers if not r.rolls_by})
    rolled = sorted({f"{r.workload.name} ({r.rolls_by})" for r in readers if r.rolls_by})
    notes = [f"running pods of {', '.join(kept)} keep the old values until restarted"] if kept else []
    return notes + ([f"pods of {', '.join(rolled)} roll: the annotation changes with the content"] if rolled else [])


def _replacement_section(report: RolloutReport) -> list[str]:
    lines = [
        "### Replacements (a change to a replace-forcing input)",
        "",
        "| resource | replaced when these change | how | note |",
        "|---|---|---|---|",
    ]
    readers = restart_readers(report.graph, report.timeline, report.rules)
    for resource in report.graph:
        fields = replace_fields(resource, report.rules)
        if not fields or not resource.custom:
            continue
        outcome = predict(report.graph, resource, report.rules, fields[-1])
        colliding = [p for f in fields if (p := predict(report.graph, resource, report.rules, f)).collides]
        flagged = resource.protect or resource.delete_before_replace or resource.key in readers or colliding
        if not (flagged or data_role(resource, report.rules)):
            continue
        notes = _reader_notes(readers[resource.key]) if resource.key in readers else []
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
