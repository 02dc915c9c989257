"""The engine's plan held against the offline diff: a preview's step events (the engine's shape, read by
`tools.e2e.engine_state.engine_plan`) that agree say so with the output linked; each resource the engine sees
otherwise (a replacement the offline diff calls an update, a resource only one of them touches) is named
among the comment's consequences. The run against the real engine is tests/e2e/test_pr_diff_engine.py."""

from __future__ import annotations

from typing import Any

from pulumi.automation import StepEventMetadata

from tools.e2e.engine_state import engine_plan
from tools.pr_diff.engine import EngineReport, disagreements
from tools.pr_diff.markdown import render_markdown
from tools.pr_diff.records import Render
from tools.pr_diff.stack_diff import StackDiff, diff_stack
from tools.rollout.rules import load_rules

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
JOB = "kubernetes:batch/v1:Job"
LINK = "`build/pr-diff/engine/dev.txt`"


def _record(type_token: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_token, "name": name, "custom": True, "parent": "", "provider": "", "inputs": inputs}


def _step(op: str, type_token: str, name: str) -> StepEventMetadata:
    urn = f"urn:pulumi:dev::nemotron-lightning::{type_token}::{name}"
    return StepEventMetadata.from_json({"op": op, "urn": urn, "type": type_token})


def offline_diff() -> StackDiff:
    """`gateway` scales in place, `smoke` (a Job's template) is replaced, `extra` is added."""
    base = Render.from_records(
        [
            _record(DEPLOYMENT, "gateway", {"metadata": {"name": "gateway"}, "spec": {"replicas": 1}}),
            _record(JOB, "smoke", {"metadata": {"name": "smoke"}, "spec": {"template": {"x": 1}}}),
        ],
        {},
    )
    head = Render.from_records(
        [
            _record(DEPLOYMENT, "gateway", {"metadata": {"name": "gateway"}, "spec": {"replicas": 2}}),
            _record(JOB, "smoke", {"metadata": {"name": "smoke"}, "spec": {"template": {"x": 2}}}),
            _record(CONFIG_MAP, "extra", {"metadata": {"name": "extra"}}),
        ],
        {},
    )
    return diff_stack("dev", base, head, load_rules())


def test_an_engine_plan_like_the_offline_diff_agrees():
    diff = offline_diff()
    kinds = {c.name: c.kind for c in diff.resources}
    operation = {"add": "create", "change": "update", "remove": "delete"}
    steps = [_step("same", "pulumi:pulumi:Stack", "nemotron-lightning-dev")]
    for change in diff.resources:
        if change.kind == "replace":
            steps += [
                _step(op, change.type, change.name) for op in ("delete-replaced", "replace", "create-replacement")
            ]
        else:
            steps.append(_step(operation[change.kind], change.type, change.name))
    assert disagreements(diff, engine_plan(steps)) == ()
    text = render_markdown(diff, "base", "head", engine=EngineReport("pulumi 3", "preview text", LINK, ()))
    assert f"agrees with this offline diff; its output: {LINK}" in text.split("<details>")[0]
    assert set(kinds.values()) >= {"add", "change", "replace"}, kinds


def test_each_resource_the_engine_sees_otherwise_is_named_before_the_details():
    diff = offline_diff()
    replaced = next(c for c in diff.resources if c.kind == "replace")
    changed = next(c for c in diff.resources if c.kind == "change")
    added = next(c for c in diff.resources if c.kind == "add")
    plan = engine_plan(
        [
            _step("update", replaced.type, replaced.name),  # the offline diff replaces it
            *(_step(op, changed.type, changed.name) for op in ("create-replacement", "replace", "delete-replaced")),
            _step("create", added.type, added.name),
            _step("update", "kubernetes:core/v1:Namespace", "serving-namespace"),  # offline: unchanged
        ]
    )
    found = disagreements(diff, plan)
    assert found == (
        f"**{changed.name}**: offline update, engine replace (create-first)",
        "**serving-namespace**: offline no change, engine update",
        f"**{replaced.name}**: offline replace, engine update",
    )
    text = render_markdown(diff, "base", "head", engine=EngineReport("pulumi 3", "preview text", LINK, found))
    lead = text.split("<details>")[0]
    assert "The engine's `pulumi preview` disagrees with this offline diff** on 3 resources" in lead
    assert all(item in lead for item in found) and LINK in lead
    assert "preview text" in text.split(lead)[1], "the engine's output follows, folded"


def test_an_engine_that_could_not_preview_is_said_not_hidden():
    report = EngineReport("pulumi (failed)", "the engine could not preview: ...", LINK, (), ran=False)
    text = render_markdown(offline_diff(), "base", "head", engine=report)
    assert f"The engine could not preview this change**; its output: {LINK}" in text.split("<details>")[0]
