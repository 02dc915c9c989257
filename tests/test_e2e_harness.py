"""The end-to-end harness's own logic, without a cluster: fake nodes from a render, the stand-in operator's
objects, and how the engine's update plan is read (tests/e2e runs them for real)."""

from __future__ import annotations

import math

from stack_helpers import all_targets_config, rendered_stack, run_config

from serving_stack.facts import load_facts
from serving_stack.names import GPU_PRODUCT_LABEL
from tools.e2e.engine_diff import not_previewable
from tools.e2e.engine_state import engine_plan, model_plan, state_resources
from tools.e2e.fake_nodes import EFA, GPU, node_objects, node_shapes
from tools.e2e.stand_in_operator import FINALIZER, component_deployment, frontend_service


def _manifests(run) -> list[dict]:
    return [
        r.to_json()["inputs"]
        for r in run.resources
        if r.custom and r.type.startswith("kubernetes:") and "kind" in (r.to_json()["inputs"] or {})
    ]


def test_fake_nodes_carry_every_gpu_the_targets_ask_for():
    manifests = _manifests(run_config(all_targets_config()))
    shapes = node_shapes(manifests)
    aws = load_facts().aws
    products = {label for gpu in aws.gpus.values() for label in gpu.product_labels}
    wanted = {
        e["values"][0]
        for m in manifests
        if m["kind"] == "DynamoGraphDeployment"
        for c in m["spec"]["components"]
        for t in (
            ((c["podTemplate"]["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
            or {}
        ).get("nodeSelectorTerms", [])[:1]
        for e in t.get("matchExpressions", [])
        if e["key"] == GPU_PRODUCT_LABEL
    }
    assert wanted and wanted <= products
    assert {dict(s.labels)[GPU_PRODUCT_LABEL] for s in shapes} == wanted
    nodes = node_objects(shapes)
    assert len({n["metadata"]["name"] for n in nodes}) == len(nodes)
    for shape in shapes:
        of_shape = [
            n
            for n in nodes
            if dict(shape.labels).items() <= n["metadata"]["labels"].items()
            and n["spec"]["taints"] == [{"key": k, "value": v, "effect": e} for k, v, e in shape.taints]
        ]
        assert len(of_shape) == max(1, math.ceil(shape.gpus_wanted / shape.gpus))
        instance = aws.instance_types[shape.instance_type]
        for node in of_shape:
            assert node["status"]["capacity"][GPU] == str(instance.gpus)
            assert node["status"]["capacity"].get(EFA, "0") == str(instance.efaInterfaces)
            assert node["spec"]["taints"] == [{"key": k, "value": v, "effect": e} for k, v, e in shape.taints]


def test_a_node_count_and_gpu_count_can_be_forced_for_full_pools():
    shapes = node_shapes(_manifests(rendered_stack("dev")), gpus_per_node=1)
    nodes = node_objects(shapes, nodes_per_shape=1)
    gpu_nodes = [n for n in nodes if GPU in n["status"]["capacity"]]
    assert len(gpu_nodes) == len(shapes) and all(n["status"]["capacity"][GPU] == "1" for n in gpu_nodes)


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
        return {"op": op, "urn": f"urn:pulumi:dev::p::kubernetes:core/v1:ConfigMap::{name}"}

    preview = {
        "steps": [
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
            {"op": "same", "urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev"},
        ]
    }
    assert engine_plan(preview) == {
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
