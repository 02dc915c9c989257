"""Planted violations from `tests/data/planted_violations*.yaml` (the planted set and the held-out set of
issue 35): each case applies its steps to a recorded render and must be caught by its own policy and by no
other (but the `also` policies a case names, each judging the same change from its side); each near miss (the
valid variant beside an evasion) must add no finding at all. The baseline is the recording with the case's
neutral steps only (`to_v1alpha1`: the same objects in another served version, judged alike, see
test_policy_served_versions.py), so a finding that only changes its wording there does not count."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import yaml
from planted_steps import NEUTRAL_STEPS, apply_step
from policy_helpers import POLICY, recording

from policy.nemotron_policies.offline import Violation, evaluate


@functools.cache
def baseline(stack: str, neutral_steps: str) -> frozenset[Violation]:
    """The findings of the unchanged recording with the case's neutral steps (JSON text, to be cacheable)."""
    resources = recording(stack)
    for step in json.loads(neutral_steps):
        apply_step(resources, step)
    return frozenset(evaluate(resources, stack=stack))


DATA = [
    yaml.safe_load(path.read_text())
    for path in sorted((Path(__file__).parent / "data").glob("planted_violations*.yaml"))
]
CASES = [case for data in DATA for case in data["cases"]]
NEAR_MISSES = [case for data in DATA for case in data.get("near_misses", [])]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_planted_violation_is_caught_by_its_policy_only(case):
    resources, neutral = recording(case["stack"]), [s for s in case["steps"] if NEUTRAL_STEPS.intersection(s)]
    for step in case["steps"]:
        apply_step(resources, step)
    caught = set(evaluate(resources, stack=case["stack"])) - baseline(case["stack"], json.dumps(neutral))
    assert caught, f"no policy caught {case['id']} ({case['why']}); expected {case['policy']}"
    expected = {case["policy"], *case.get("also", [])}
    assert {v.policy_name for v in caught} == expected, sorted((v.policy_name, v.message) for v in caught)


@pytest.mark.parametrize("case", NEAR_MISSES, ids=[c["id"] for c in NEAR_MISSES])
def test_near_miss_adds_no_finding(case):
    resources = recording(case["stack"])
    for step in case["steps"]:
        apply_step(resources, step)
    added = set(evaluate(resources, stack=case["stack"])) - baseline(case["stack"], "[]")
    assert not added, sorted((v.policy_name, v.message) for v in added)


def test_the_cases_are_distinct_and_cover_every_policy():
    ids = [c["id"] for c in CASES + NEAR_MISSES]
    assert len(ids) == len(set(ids)) >= 45
    assert {c["policy"] for c in CASES} == set(POLICY)
    assert all(c["why"] and c["steps"] for c in CASES)
