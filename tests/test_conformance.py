"""Every one of the catalog's targets renders equal to the upstream manifest in ../shared/reference,
except for the fields that documented stack settings change (see serving_stack/plan/manifests.py)."""
from __future__ import annotations

import re

import pytest
from deepdiff import DeepDiff

from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.manifests import CONFIG_CHECKSUM_ANNOTATION, TIMEOUT_ANNOTATION, WAIT_FOR_ANNOTATION
from tools.mock_runtime import plain_numbers
from stack_helpers import CONFIG_MAP_TYPE, DGD_TYPE, all_targets_config, reference_documents, reference_exists, run_config

NAMESPACE = "conformance"
PULL_SECRET = "ngc-pull"
REGISTRY = "registry.example.com/mirror/ai-dynamo"
TAG = "1.5.0-mirror.2"
REPLICAS = {"vllm/agg-h200-dspark-kv-router": {"agg": 2}, "vllm/disagg-h100-mtp": {"VllmDecodeWorker": 3}}
AUTOSCALED = {"vllm/disagg-h100-mtp": {"minReplicaSets": 1, "maxReplicaSets": 4}, "vllm/agg-b200-mtp": {"maxReplicaSets": 2}}

pytestmark = pytest.mark.skipif(not reference_exists(), reason="../shared/reference is not beside this checkout")


def _documented_change(target_id: str, path: str, change: str, new_value) -> bool:
    """Is this one field difference explained by a stack setting, with the configured value?"""
    if path == "root['metadata']['namespace']":
        return change == "dictionary_item_added" and new_value == NAMESPACE
    if re.fullmatch(r"root\['spec'\]\['components'\]\[\d+\]\['podTemplate'\]\['spec'\]\['imagePullSecrets'\]\[0\]\['name'\]", path):
        return new_value == PULL_SECRET
    if re.fullmatch(r"root\['spec'\]\['components'\]\[\d+\]\['podTemplate'\]\['spec'\]\['containers'\]\[\d+\]\['image'\]", path):
        return bool(re.fullmatch(re.escape(REGISTRY) + r"/(vllm|tensorrtllm)-runtime:" + re.escape(TAG), new_value))
    worker_pod = r"root\['spec'\]\['components'\]\[\d+\]\['podTemplate'\]\['spec'\]"
    if re.fullmatch(worker_pod + r"\['initContainers'\]", path):  # modelCache.prewarm.gateWorkers
        return change == "dictionary_item_added" and [c["name"] for c in new_value] == ["wait-for-prewarm"]
    if re.fullmatch(worker_pod + r"\['volumes'\]\[\d+\]", path):
        return change == "iterable_item_added" and new_value["name"] in ("prewarm-state", "prewarm-program")
    if path == "root['metadata']['annotations']":  # dynamo.readiness: `up` waits for Ready
        return change == "dictionary_item_added" and set(new_value) == {WAIT_FOR_ANNOTATION, TIMEOUT_ANNOTATION}
    if re.fullmatch(r"root\['spec'\]\['components'\]\[\d+\]\['podTemplate'\]\['metadata'\]", path):
        return change == "dictionary_item_added" and set(new_value["annotations"]) == {CONFIG_CHECKSUM_ANNOTATION}
    match = re.fullmatch(r"root\['spec'\]\['components'\]\[(\d+)\]\['replicas'\]", path)
    if match:
        return new_value in REPLICAS.get(target_id, {}).values()
    if re.fullmatch(r"root\['spec'\]\['components'\]\[\d+\]\['scalingAdapter'\]", path):  # autoscaling.targets
        return change == "dictionary_item_added" and target_id in AUTOSCALED and new_value == {"enabled": True}
    return False


def unexplained_differences(target_id: str, upstream: dict, rendered: dict) -> list[str]:
    diff = DeepDiff(upstream, rendered, view="tree")
    problems = []
    for change, items in diff.items():
        for item in items:
            new_value = item.t2 if change != "dictionary_item_removed" else None
            if not _documented_change(target_id, item.path(), change, new_value):
                problems.append(f"{target_id}: {change} at {item.path()}: {item.t1!r} -> {new_value!r}")
    return problems


@pytest.fixture(scope="module")
def all_targets_run():
    config = all_targets_config(
        kubernetes={"namespace": NAMESPACE, "cluster": {"source": "kubeconfig", "context": "test"}},
        dynamo={"imagePullSecret": PULL_SECRET, "runtime": {"registry": REGISTRY, "tag": TAG}},
        targets=[{"id": t, "replicas": REPLICAS.get(t, {})} for t in load_catalog().recipes],
        autoscaling={"prometheusUrl": "http://prometheus.example.svc:9090", "targets": AUTOSCALED},
    )
    return run_config(config)


def test_catalog_covers_every_upstream_recipe():
    assert len(load_catalog().recipes) == 30


@pytest.mark.parametrize("target_id", sorted(load_catalog().recipes))
def test_target_renders_as_upstream(all_targets_run, target_id):
    recipe = load_catalog().recipe(target_id)
    reference = reference_documents(target_id)
    rendered = {
        r.type: plain_numbers(r.inputs)
        for r in all_targets_run.resources
        if r.parent == f"nemotron:dynamo:ServingTarget::{recipe.name}" and r.type in (DGD_TYPE, CONFIG_MAP_TYPE)
    }
    problems = unexplained_differences(target_id, reference["DynamoGraphDeployment"], rendered[DGD_TYPE])
    problems += unexplained_differences(target_id, reference["ConfigMap"], rendered[CONFIG_MAP_TYPE])
    assert not problems, "\n".join(problems)


def test_documented_settings_took_effect(all_targets_run):
    """The exceptions above are not vacuous: each setting shows up in the rendered DGDs."""
    dgds = {r.inputs["metadata"]["name"]: r.inputs for r in all_targets_run.resources if r.type == DGD_TYPE}
    assert len(dgds) == 30
    kv_router = {c["name"]: c for c in dgds["vllm-agg-h200-dspark-kv-router"]["spec"]["components"]}
    assert kv_router["agg"]["replicas"] == 2
    for target_id in AUTOSCALED:
        components = dgds[load_catalog().recipe(target_id).name]["spec"]["components"]
        assert {c["name"] for c in components if c.get("scalingAdapter")} == \
               {c["name"] for c in components if c["type"] != "frontend"}
    for dgd in dgds.values():
        assert dgd["metadata"]["namespace"] == NAMESPACE
        assert dgd["metadata"]["annotations"][WAIT_FOR_ANNOTATION] == "condition=Ready"
        for component in dgd["spec"]["components"]:
            pod = component["podTemplate"]["spec"]
            assert pod["imagePullSecrets"] == [{"name": PULL_SECRET}]
            assert pod["containers"][0]["image"].startswith(REGISTRY + "/")
            if component["type"] != "frontend":
                assert [c["name"] for c in pod["initContainers"]] == ["wait-for-prewarm"]


def test_a_field_level_difference_is_reported():
    """The comparison itself can fail, and says where."""
    upstream = reference_documents("vllm/agg-h100-mtp")["DynamoGraphDeployment"]
    tampered = plain_numbers(upstream)
    tampered = {**tampered, "spec": {**tampered["spec"], "backendFramework": "sglang"}}
    (problem,) = unexplained_differences("vllm/agg-h100-mtp", upstream, tampered)
    assert "root['spec']['backendFramework']" in problem and "'sglang'" in problem
