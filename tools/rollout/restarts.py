"""Who keeps old values when a Secret or ConfigMap is replaced.

A content change replaces the object under the same name (provider_rules.yaml `replacements`), and nothing
restarts the pods that read it: a long-running workload keeps what it read at start until its pod template
changes. The usual remedy is a checksum of the content in a pod template annotation (helm-checksum), which
changes the template with the content. The model cannot recompute the program's checksum, so any pod template
annotation whose key contains a marker of `restart_annotations` counts as one. Image pull Secrets are not
"read": a new one applies to the next pull.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.rollout.findings import RESTART, Finding
from tools.rollout.graph import Resource, StackGraph, lookup
from tools.rollout.rules import Rules
from tools.rollout.schedule import Timeline
from tools.rollout.workloads import PULLS_IMAGES

TEMPLATE_METADATA = {"DynamoGraphDeployment": "spec.components[].podTemplate.metadata"}
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
    """A long-running workload that keeps old values when what it reads is replaced (a warning)."""
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
