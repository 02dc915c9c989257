"""Waits that can expire before what they wait for is done, and successes that come before serving.

Three checks on the timeline:
- a wait shorter than the work it waits for (a claim's hard-coded bind wait against the provisioning of its
  volume, or a static volume that can never bind it, a Job's timeout against its own activeDeadlineSeconds,
  a Helm timeout against the chart's install,
  a graph's waitFor timeout against its workers' startup budget);
- a readiness prerequisite the resource is not ordered after (not among its transitive dependencies, or
  among them but not awaited) that can, in the worst case, finish after the wait has expired;
- a prerequisite the stack never creates, in a namespace this stack creates (so it cannot exist yet).
And one warning: a serving resource `up` does not wait for at all.
"""

from __future__ import annotations

from tools.rollout.findings import SERVE, WAIT, Finding
from tools.rollout.graph import StackGraph
from tools.rollout.rules import Rules
from tools.rollout.schedule import Step, Timeline
from tools.rollout.volumes import binding


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
