"""The rules data: every entry names its source, the steps it names are in the durations table, every resource
type the stacks record has a replacement rule, and the await rule follows the provider's precedence."""

from __future__ import annotations

import re

import pytest
import yaml
from rollout_helpers import RULES, VARIANTS, annotate, records

from tools.rollout.graph import HELM_RELEASE, Resource
from tools.rollout.rules import PROVIDER_RULES_FILE
from tools.rollout.schedule import await_of

# A repository reference (owner/repo#n, a path), documentation, a facts file or a measurement in the text.
NAMED_SOURCE = re.compile(r"[\w.-]+/[\w.-]+|documentation|docs|FACTS\.md|README|\.yaml|API reference|measured")


def _sources_used() -> list[str]:
    data = yaml.safe_load(PROVIDER_RULES_FILE.read_text())
    kubernetes, aws = data["kubernetes"], data["aws"]
    singles = [
        kubernetes["default_source"],
        kubernetes["helm_release"]["source"],
        kubernetes["named_objects_delete_before_replace"]["source"],
        aws["default_source"],
        kubernetes["static_binding"]["source"],
        kubernetes["static_reclaim"]["source"],
        kubernetes["restart_annotations"]["source"],
        kubernetes["released_volume"]["source"],
    ]
    return (
        [k["source"] for k in kubernetes["kinds"].values()]
        + singles
        + [t["source"] for t in aws["types"].values()]
        + [d["source"] for d in aws["deletion"].values()]
    )


def test_every_rule_names_a_source_that_exists():
    assert set(_sources_used()) <= set(RULES.sources)
    assert all(r.source in RULES.sources or r.source.startswith(("pulumi", "terraform")) for r in RULES.replacements)
    assert all(
        "/" in text or "docs" in text.lower() or "documentation" in text.lower() for text in RULES.sources.values()
    )


def test_every_step_the_rules_name_is_in_the_durations_table():
    named = {*RULES.aws_durations.values(), *(p["duration"] for p in RULES.provisioners.values())}
    assert named <= set(RULES.durations.steps)


def _has_rule(resource: Resource) -> bool:
    """Whether the data says how this type is replaced (components and providers need none)."""
    kinds = (not resource.custom, resource.is_provider, resource.type == HELM_RELEASE, resource.is_kubernetes_object)
    return any(kinds) or resource.type in RULES.aws_types


@pytest.mark.parametrize("stack", ["dev", "prod", "all-targets", *sorted(VARIANTS)])
def test_every_recorded_type_has_a_replacement_rule(stack):
    missing = sorted({r["type"] for r in records(stack) if not _has_rule(Resource.from_record(r))})
    assert missing == []


def test_the_efs_backend_is_among_the_checked_stacks():
    assert any(r["type"].startswith("aws:efs") for r in records("prod-efs"))


def test_custom_timeouts_win_over_the_annotation_and_skip_await_wins_over_both():
    dev = records("dev")
    job = next(r for r in dev if r["inputs"].get("kind") == "Job")
    job["customTimeouts"] = {"create": "30m"}
    annotate(job, timeout_seconds="60")
    assert await_of(Resource.from_record(job), RULES).timeout_seconds == 1800
    job["customTimeouts"] = {}
    assert await_of(Resource.from_record(job), RULES).timeout_seconds == 60
    annotate(job, skip_await="true")
    assert not await_of(Resource.from_record(job), RULES).awaited


def test_custom_resources_wait_only_with_wait_for():
    dev = records("dev")
    (graph,) = [r for r in dev if r["inputs"].get("kind") == "DynamoGraphDeployment"]
    annotations = graph["inputs"]["metadata"]["annotations"]
    configured = int(annotations[RULES.annotations["timeout_seconds"]])
    assert await_of(Resource.from_record(graph), RULES).timeout_seconds == configured
    for name in ("wait_for", "timeout_seconds"):
        annotations.pop(RULES.annotations[name])
    assert not await_of(Resource.from_record(graph), RULES).awaited
    annotate(graph, wait_for="condition=Ready")
    assert await_of(Resource.from_record(graph), RULES).timeout_seconds == RULES.default_timeout_seconds
