"""The rules and durations data: every entry names its source, numbers are consistent, every resource type the
stacks record has a replacement rule, and the await rule follows the provider's precedence."""
from __future__ import annotations

import pytest
import yaml
from rollout_helpers import RULES, annotate, committed_config, records
from stack_helpers import run_config

from tools.rollout.awaits import await_of
from tools.rollout.graph import Resource
from tools.rollout.replacements import has_rule
from tools.rollout.rules import PROVIDER_RULES_FILE


def _sources_used() -> list[str]:
    data = yaml.safe_load(PROVIDER_RULES_FILE.read_text())
    kubernetes, aws = data["kubernetes"], data["aws"]
    singles = [kubernetes["replace_source"], kubernetes["default_source"], kubernetes["helm_release"]["source"],
               kubernetes["named_objects_delete_before_replace"]["source"], aws["default_source"]]
    return ([k["source"] for k in kubernetes["kinds"].values()] + singles
            + [t["source"] for t in aws["types"].values()] + [d["source"] for d in aws["deletion"].values()])


def test_every_rule_names_a_source_that_exists():
    assert set(_sources_used()) <= set(RULES.sources)
    assert all("/" in text or "docs" in text.lower() or "documentation" in text.lower() for text in RULES.sources.values())


def test_durations_are_consistent_and_say_what_they_rest_on():
    table = RULES.durations
    entries = [table["default"], table["kubernetes_object"], *table["types"].values(), table["node_groups"]["cpu"],
               table["node_groups"]["gpu"], *table["charts"].values(), *table["provisioning"].values()]
    for entry in entries:
        assert 0 <= entry["typical"] <= entry["max"] and entry["basis"]
    checkpoints = table["checkpoints"]
    for rate in (table["images"]["pull_mb_per_s"], checkpoints["download_mb_per_s"], checkpoints["cache_read_mb_per_s"]):
        assert 0 < rate["worst"] <= rate["typical"] and rate["basis"]
    provisioners = {p["duration"] for p in RULES.provisioners.values()}
    assert provisioners <= set(table["provisioning"])


@pytest.mark.parametrize("stack", ["dev", "prod", "all-targets"])
def test_every_recorded_type_has_a_replacement_rule(stack):
    missing = sorted({r["type"] for r in records(stack) if not has_rule(Resource.from_record(r), RULES)})
    assert missing == []


def test_the_efs_backend_types_have_rules_too():
    config = committed_config("prod")
    config["aws"]["modelCacheStorage"] = {"backend": "efs", "protect": True}
    config["modelCache"]["storageClassName"] = "efs-ap"
    recorded = [Resource.from_record(r.to_json()) for r in run_config(config).resources]
    assert [r for r in recorded if r.type.startswith("aws:efs")]
    assert sorted({r.type for r in recorded if not has_rule(r, RULES)}) == []


def test_custom_timeouts_win_over_the_annotation_and_skip_await_wins_over_both():
    dev = records("dev")
    (job,) = [r for r in dev if r["inputs"].get("kind") == "Job"]
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
    assert not await_of(Resource.from_record(graph), RULES).awaited
    annotate(graph, wait_for="condition=Ready")
    assert await_of(Resource.from_record(graph), RULES).timeout_seconds == RULES.default_timeout_seconds
