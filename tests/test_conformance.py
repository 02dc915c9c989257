"""Every catalog target, as the whole program registers it, equals the project's vendored upstream manifest
(`catalog/recipes/`, read from disk) except for fields a documented stack setting changes; so do the
model-cache claim and download Jobs. The rules are `tools/conformance.py` (shared with `make absorb`)."""

from __future__ import annotations

import pytest
import yaml
from stack_helpers import CONFIG_MAP_TYPE, DGD_TYPE, run_config

from serving_stack.facts.catalog import CATALOG_DIR, load_catalog
from serving_stack.plan.serving import WAIT_FOR_ANNOTATION
from tools.conformance import (
    DOWNLOAD_IMAGE,
    NAMESPACE,
    PULL_SECRET,
    REGISTRY,
    conformance_config,
    differences,
    model_cache_problems,
    replicas_override,
    target_problems,
)
from tools.mock_runtime import plain_numbers

pytestmark = pytest.mark.catalog_driven


def vendored(relative_path: str) -> dict[str, dict]:
    """A vendored manifest by kind, read from the file (not from the loaded catalog)."""
    return {doc["kind"]: doc for doc in yaml.safe_load_all((CATALOG_DIR / relative_path).read_text()) if doc}


@pytest.fixture(scope="module")
def all_targets_run():
    targets = [{"id": r.id, "replicas": replicas_override(r)} for r in load_catalog().recipes.values()]
    return run_config(conformance_config(targets))


def rendered(run, parent: str, type_token: str) -> dict:
    (only,) = [r for r in run.resources if r.parent == parent and r.type == type_token]
    return plain_numbers(only.inputs)


@pytest.mark.parametrize("target_id", sorted(load_catalog().recipes))
def test_target_renders_as_vendored_upstream(all_targets_run, target_id):
    recipe = load_catalog().recipe(target_id)
    parent = f"nemotron:dynamo:ServingTarget::{recipe.name}"
    problems = target_problems(
        recipe,
        replicas_override(recipe),
        rendered(all_targets_run, parent, CONFIG_MAP_TYPE),
        rendered(all_targets_run, parent, DGD_TYPE),
        upstream=vendored(recipe.entry.manifest),
    )
    assert not problems, "\n".join(problems)


def test_model_cache_renders_as_vendored_upstream(all_targets_run):
    cache = load_catalog().model_cache
    parent = "nemotron:kubernetes:ModelCache::model-cache"
    claim = vendored(load_catalog().data.modelCache.claim)["PersistentVolumeClaim"]
    problems = model_cache_problems(
        "claim", claim, rendered(all_targets_run, parent, "kubernetes:core/v1:PersistentVolumeClaim")
    )
    jobs = {
        j.inputs["metadata"]["name"]: plain_numbers(j.inputs)
        for j in all_targets_run.resources
        if j.parent == parent and j.type == "kubernetes:batch/v1:Job"
    }
    assert sorted(jobs) == sorted(job.name for job in cache.jobs)
    for job in cache.jobs:
        problems += model_cache_problems(f"Job {job.name}", vendored(job.path)["Job"], jobs[job.name])
        assert jobs[job.name]["spec"]["template"]["spec"]["containers"][0]["image"] == DOWNLOAD_IMAGE
    assert not problems, "\n".join(problems)


def test_documented_settings_took_effect(all_targets_run):
    """The rules are not vacuous: each setting shows up in every rendered DGD."""
    dgds = {
        r.inputs["metadata"]["name"]: plain_numbers(r.inputs) for r in all_targets_run.resources if r.type == DGD_TYPE
    }
    assert len(dgds) == len(load_catalog().recipes)
    for recipe in load_catalog().recipes.values():
        dgd = dgds[recipe.name]
        assert dgd["metadata"]["namespace"] == NAMESPACE
        assert dgd["metadata"]["annotations"][WAIT_FOR_ANNOTATION] == "condition=Ready"
        components = {c["name"]: c for c in dgd["spec"]["components"]}
        for name, replicas in replicas_override(recipe).items():
            assert components[name]["replicas"] == replicas
        for component in components.values():
            pod = component["podTemplate"]["spec"]
            assert pod["imagePullSecrets"] == [{"name": PULL_SECRET}]
            assert pod["containers"][0]["image"].startswith(REGISTRY + "/")
            if component["type"] != "frontend":
                assert [c["name"] for c in pod["initContainers"]] == ["wait-for-prewarm"]


def test_a_field_level_difference_is_reported():
    """The comparison itself can fail, and says where."""
    recipe = next(iter(load_catalog().recipes.values()))
    upstream = vendored(recipe.entry.manifest)
    tampered = {
        **upstream["DynamoGraphDeployment"],
        "spec": {**upstream["DynamoGraphDeployment"]["spec"], "backendFramework": "sglang"},
    }
    (problem,) = target_problems(recipe, {}, upstream["ConfigMap"], tampered, upstream=upstream)
    assert "root['spec']['backendFramework']" in problem
    assert "'sglang'" in problem


def test_differences_are_positional_and_keyed():
    assert [(d.change, d.path) for d in differences({"a": [1, 2], "b": 1}, {"a": [1, 3, 4], "c": 1})] == [
        ("values_changed", "root['a'][1]"),
        ("iterable_item_added", "root['a'][2]"),
        ("dictionary_item_removed", "root['b']"),
        ("dictionary_item_added", "root['c']"),
    ]
