"""Rules the real engine imposes that the program itself must respect (each also run for real by tests/e2e):

- a change of targets on the same GPUs cannot finish in one `up` (removed resources are deleted only after
  every create, and a new DGD's create waits for Ready): refused with the procedure, from the catalog's data;
- two stacks on one cluster share no cluster-scoped object name (the provider refuses to adopt an existing
  object, and one stack's `destroy` would delete the other's);
- a DGD's readiness wait covers everything before its workers are Ready, and its delete wait is bounded.
"""

from __future__ import annotations

import copy
import itertools

import pytest
from stack_helpers import BASE_CONFIG, DGD_TYPE, run_config

from serving_stack.facts import load_facts
from serving_stack.plan.serving import deployed_dynamo_targets, swap_refusal

CATALOG = load_facts().catalog


def _gpus(target_id: str) -> frozenset[str]:
    return frozenset(CATALOG.recipe(target_id).gpu_products)


PAIRS = list(itertools.permutations(sorted(CATALOG.recipes), 2))
SAME_GPU = [(a, b) for a, b in PAIRS if _gpus(a) & _gpus(b)]
OTHER_GPU = [(a, b) for a, b in PAIRS if not _gpus(a) & _gpus(b)]


@pytest.mark.parametrize(("old", "new"), SAME_GPU[:: max(1, len(SAME_GPU) // 12)])
def test_a_swap_on_the_same_gpus_is_refused_with_the_procedure(old, new):
    refusal = swap_refusal([old], [new], CATALOG, surge=False)
    assert refusal is not None
    message = str(refusal)
    assert message.startswith("targets: ") and old in message and new in message
    assert "two `pulumi up`s" in message and "dynamo.targetSwap: surge" in message and "\n" not in message
    assert swap_refusal([old], [new], CATALOG, surge=True) is None


@pytest.mark.parametrize(("old", "new"), OTHER_GPU[:: max(1, len(OTHER_GPU) // 12)])
def test_a_swap_onto_other_gpus_finishes_in_one_up(old, new):
    assert swap_refusal([old], [new], CATALOG, surge=False) is None


def test_adding_keeping_or_only_removing_targets_is_never_refused():
    ids = sorted(CATALOG.recipes)
    assert swap_refusal([], ids[:2], CATALOG, surge=False) is None
    assert swap_refusal(ids[:2], ids[:3], CATALOG, surge=False) is None
    assert swap_refusal(ids[:3], ids[:1], CATALOG, surge=False) is None


def test_a_removed_target_the_catalog_no_longer_has_counts_as_holding_every_gpu():
    new = sorted(CATALOG.recipes)[0]
    assert swap_refusal(["retired/unknown-target"], [new], CATALOG, surge=False) is not None


def test_deployed_targets_are_read_from_the_outputs_contract():
    endpoints = [{"id": "a/b", "kind": "dynamo"}, {"id": "sm", "kind": "sagemaker"}, {"kind": "dynamo"}]
    assert deployed_dynamo_targets(endpoints) == ["a/b"]
    assert deployed_dynamo_targets(None) == [] and deployed_dynamo_targets({}) == []


def _cluster_scoped_names(namespace: str) -> set[tuple[str, str]]:
    config = copy.deepcopy(BASE_CONFIG)
    config["kubernetes"]["namespace"] = namespace
    run = run_config(config)
    names = set()
    for resource in run.resources:
        inputs = resource.to_json()["inputs"]
        metadata = inputs.get("metadata") if isinstance(inputs, dict) else None
        kubernetes = resource.custom and resource.type.startswith("kubernetes:") and isinstance(metadata, dict)
        if kubernetes and "namespace" not in metadata and inputs.get("kind") != "Namespace":
            names.add((inputs.get("kind"), metadata.get("name")))
    return names


def test_two_stacks_on_one_cluster_share_no_cluster_scoped_name():
    first, second = _cluster_scoped_names("stack-one"), _cluster_scoped_names("stack-two")
    assert first, "the stack creates cluster-scoped objects; the test must see them"
    assert first.isdisjoint(second), first & second


def _dgd(config):
    run = run_config(config)
    return next(r.to_json() for r in run.resources if r.type == DGD_TYPE)


def test_the_readiness_wait_covers_pull_prewarm_gate_and_startup_probe():
    from serving_stack.facts import load_facts

    platform = load_facts().platform
    dgd = _dgd(BASE_CONFIG)["inputs"]
    gate = BASE_CONFIG.get("modelCache", {}).get("prewarm", {}).get("waitTimeoutSeconds", 900)
    probes = [
        int(p.get("initialDelaySeconds", 0)) + int(p["periodSeconds"]) * int(p["failureThreshold"])
        for c in dgd["spec"]["components"]
        for p in [x.get("startupProbe") for x in c["podTemplate"]["spec"]["containers"]]
        if p
    ]
    timeout = int(dgd["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    assert timeout >= platform.readiness.imagePullAllowanceSeconds + gate + max(probes)


def test_a_dgd_delete_waits_a_bounded_time_for_the_operator():
    record = _dgd({**BASE_CONFIG, "dynamo": {"deleteTimeoutSeconds": 45}})
    assert record["customTimeouts"]["delete"] == "45s"


def test_every_engine_confirmed_rule_names_a_scenario_that_exists_and_the_engine_built():
    import ast
    from pathlib import Path

    from tools.rollout.rules import load_engine_confirmed

    root = Path(__file__).resolve().parent.parent
    scenarios = ast.parse((root / "tests" / "e2e" / "test_engine_scenarios.py").read_text())
    tests = {n.name for n in scenarios.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    engine, confirmed = load_engine_confirmed()
    assert confirmed and {c["scenario"] for c in confirmed} <= tests
    build = (root / "tools" / "e2e" / "build_tools.sh").read_text()
    assert all(version in build for version in engine.values()), engine
