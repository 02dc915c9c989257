"""The end-to-end harness's own logic, without a cluster: the stand-in operator's objects and how the engine's
update plan is read (tests/e2e runs them for real; the fake nodes: tests/test_fake_nodes.py)."""

from __future__ import annotations

from pulumi.automation import StepEventMetadata
from stack_helpers import rendered_stack

from tools.e2e.engine_diff import not_previewable
from tools.e2e.engine_state import engine_plan, model_plan, state_resources
from tools.e2e.stand_in_operator import FINALIZER, component_deployment, frontend_service


def _manifests(run) -> list[dict]:
    return [
        r.to_json()["inputs"]
        for r in run.resources
        if r.custom and r.type.startswith("kubernetes:") and "kind" in (r.to_json()["inputs"] or {})
    ]


def test_the_stand_in_operator_builds_what_the_operator_owns():
    dgd = next(m for m in _manifests(rendered_stack("dev")) if m["kind"] == "DynamoGraphDeployment")
    dgd = {**dgd, "metadata": {**dgd["metadata"], "uid": "u-1", "generation": 3}}
    for component in dgd["spec"]["components"]:
        deployment = component_deployment(dgd, component)
        assert deployment["spec"]["replicas"] == int(component.get("replicas", 1))
        labels = deployment["spec"]["selector"]["matchLabels"]
        assert labels.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
        assert deployment["metadata"]["ownerReferences"][0]["uid"] == "u-1"
        assert deployment["spec"]["template"]["spec"] == component["podTemplate"]["spec"]
    frontend = next(c for c in dgd["spec"]["components"] if c["type"] == "frontend")
    assert (
        frontend_service(dgd, frontend)["metadata"]["name"] == component_deployment(dgd, frontend)["metadata"]["name"]
    )
    assert FINALIZER == "nvidia.com/finalizer"


def test_the_engine_plan_collapses_replacements_and_keeps_their_order():
    def step(op, name):
        type_ = "kubernetes:core/v1:ConfigMap"
        return StepEventMetadata.from_json({"op": op, "urn": f"urn:pulumi:dev::p::{type_}::{name}", "type": type_})

    steps = [
        step("same", "a"),
        step("update", "b"),
        step("delete-replaced", "c"),
        step("replace", "c"),
        step("create-replacement", "c"),
        step("create-replacement", "d"),
        step("replace", "d"),
        step("delete-replaced", "d"),
        step("create", "e"),
        step("delete", "f"),
        StepEventMetadata.from_json(  # the engine's own resource, never in the plan
            {"op": "update", "urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "type": "pulumi:pulumi:Stack"}
        ),
    ]
    assert engine_plan(steps) == {
        "b": "update",
        "c": "replace (delete-first)",
        "d": "replace (create-first)",
        "e": "create",
        "f": "delete",
    }


def test_the_model_plan_of_an_unchanged_render_is_empty():
    records = [r.to_json() for r in rendered_stack("dev").resources]
    assert model_plan(records, records) == {}


def test_state_comparison_leaves_out_what_only_the_engine_has():
    state = [
        {"type": "pulumi:pulumi:Stack", "urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev"},
        {
            "type": "pulumi:providers:kubernetes",
            "urn": "urn:pulumi:dev::p::pulumi:providers:kubernetes::default_4_25_0",
        },
        {"type": "pulumi:providers:kubernetes", "urn": "urn:pulumi:dev::p::pulumi:providers:kubernetes::kubernetes"},
        {"type": "pulumi:pulumi:StackReference", "urn": "urn:pulumi:dev::p::pulumi:pulumi:StackReference::last"},
    ]
    assert state_resources(state) == {("pulumi:providers:kubernetes", "kubernetes")}


def test_only_stacks_without_aws_or_helm_are_previewed_by_the_engine():
    assert "AWS" in (not_previewable([{"type": "aws:eks/cluster:Cluster"}]) or "")
    assert "Helm" in (not_previewable([{"type": "kubernetes:helm.sh/v3:Release"}]) or "")
