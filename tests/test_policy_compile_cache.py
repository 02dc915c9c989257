"""compile-cache (advisory): GPU workers of Dynamo graphs keep their compilation caches on a shared volume, and
no cache variable of the main container points outside it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from policy_helpers import DGD, POLICY, check_resource, component, main_container, object_forms, recipe
from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE
from stack_helpers import DGD_TYPE, all_targets_config, run_config

from serving_stack.facts.catalog import load_catalog, load_platform
from tools.mock_runtime import plain_numbers

pytestmark = pytest.mark.catalog_driven
CACHE = load_platform().compileCache
AGGREGATED = next(r.id for r in load_catalog().recipes.values() if not r.disaggregated)


def problems(dgd: dict[str, Any]) -> list[str]:
    return check_resource("compile-cache", DGD, dgd)


def cached(dgd: dict[str, Any], *, keep_env: bool = False) -> dict[str, Any]:
    """The upstream DGD with a compilation cache on every worker (its /tmp cache variables kept or moved)."""
    dgd = copy.deepcopy(dgd)
    for part in dgd["spec"]["components"]:
        if part["type"] == "frontend":
            continue
        part["compilationCache"] = {"pvcName": "shared-model-cache", "mountPath": CACHE.mountPath}
        if not keep_env:
            for entry in main_container(part)["env"]:
                if entry["name"] in CACHE.values(dgd["spec"]["backendFramework"]):
                    entry["value"] = CACHE.values(dgd["spec"]["backendFramework"])[entry["name"]]
    return dgd


def test_it_warns() -> None:
    assert POLICY["compile-cache"].enforcement_level == EnforcementLevel.ADVISORY


def test_every_rendered_target_passes() -> None:
    dgds = [plain_numbers(r.inputs) for r in run_config(all_targets_config()).resources if r.type == DGD_TYPE]
    assert len(dgds) == len(load_catalog().recipes)
    for dgd in dgds:
        assert problems(dgd) == [], dgd["metadata"]["name"]


@pytest.mark.parametrize("target", sorted(load_catalog().recipes))
def test_an_upstream_worker_without_a_cache_is_reported_and_its_frontend_is_not(target: str) -> None:
    _, dgd = recipe(target)
    workers = [c["name"] for c in dgd["spec"]["components"] if c["type"] != "frontend"]
    found = problems(dgd)
    assert len(found) == len(workers)
    for name, message in zip(workers, found, strict=True):
        assert message.startswith(f"component {name} of {dgd['metadata']['name']} asks for nvidia.com/gpu without")


def test_a_cache_variable_left_in_tmp_is_reported() -> None:
    _, dgd = recipe(AGGREGATED)
    found = problems(cached(dgd, keep_env=True))
    tmp = [e for e in main_container(component(dgd, "worker"))["env"] if e["name"] in CACHE.values("vllm")]
    assert tmp and len(found) == len(tmp)
    assert all(f"outside its compilation cache at {CACHE.mountPath}" in m for m in found)
    assert problems(cached(dgd)) == []


FORMS = [label for label, _, _ in object_forms(["nvidia.com/v1beta1"], "DynamoGraphDeployment", {})]


@pytest.mark.parametrize("label", FORMS)
def test_every_form_of_an_uncached_worker_is_read(label: str) -> None:
    _, dgd = recipe(AGGREGATED)
    body = {k: v for k, v in dgd.items() if k not in ("apiVersion", "kind")}
    (form,) = [f for f in object_forms(["nvidia.com/v1beta1"], "DynamoGraphDeployment", body) if f[0] == label]
    assert len(check_resource("compile-cache", form[1], form[2])) == 1, label


def test_v1alpha1_services_are_read_by_their_flagged_mount() -> None:
    _, dgd = recipe(AGGREGATED)
    worker = component(dgd, "worker")
    main = {k: v for k, v in main_container(worker).items() if k not in ("name", "resources")}
    service = {
        "componentType": "worker",
        "resources": {"limits": {"gpu": "1"}},
        "extraPodSpec": {"mainContainer": main},
    }
    alpha = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment", "metadata": dgd["metadata"]}
    bare = {**alpha, "spec": {"services": {"agg": service}}}
    assert len(check_resource("compile-cache", "kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment", bare)) == 1
    flagged = {"name": "shared-model-cache", "mountPoint": "/tmp", "useAsCompilationCache": True}
    with_cache = {**alpha, "spec": {"services": {"agg": {**service, "volumeMounts": [flagged]}}}}
    assert check_resource("compile-cache", "kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment", with_cache) == []


def test_an_unknown_cache_is_not_judged() -> None:
    _, dgd = recipe(AGGREGATED)
    component(dgd, "worker")["compilationCache"] = UNKNOWN_OBJECT_VALUE
    assert problems(dgd) == []
