"""The overlays of catalog/serving_overlays.yaml decided `apply` reach every target they cover, as rendered, and
nowhere else; the conformance check lists them as intended differences and still reports anything else in the
engine arguments (a planted argument)."""

from __future__ import annotations

import copy

import pytest
from plan_helpers import FACTS

from serving_stack.facts.serving_overlays import load_serving_overlays
from serving_stack.names import WORKER_COMPONENT_TYPES
from serving_stack.plan.serving import apply_serving_overlays, flag_values
from tools.conformance import target_problems

OVERLAYS = load_serving_overlays()
APPLIED = [o for o in OVERLAYS.overlays if o.decision == "apply"]
RECIPES = sorted(FACTS.catalog.recipes.values(), key=lambda r: r.id)


def _gpu(recipe):
    return FACTS.aws.gpu_of_product(recipe.gpu_products[0])


def test_the_data_applies_something():
    assert APPLIED, "no overlay decided apply: nothing for this module to prove"
    assert any(o.covers(r.id, _gpu(r) or "", True, o.argument) for o in APPLIED for r in RECIPES)


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.id)
def test_each_applied_overlay_sets_its_argument_on_the_components_it_covers(recipe):
    dgd = copy.deepcopy(recipe.dgd)
    apply_serving_overlays(dgd, recipe.id, _gpu(recipe), OVERLAYS)
    for before, after in zip(recipe.dgd["spec"]["components"], dgd["spec"]["components"], strict=True):
        worker = before["type"] in WORKER_COMPONENT_TYPES
        containers = zip(
            before["podTemplate"]["spec"]["containers"], after["podTemplate"]["spec"]["containers"], strict=True
        )
        for old, new in containers:
            flags, upstream = flag_values(new.get("args", [])), flag_values(old.get("args", []))
            covering = [o for o in APPLIED if _gpu(recipe) and o.covers(recipe.id, _gpu(recipe), worker, o.argument)]
            for overlay in covering if old.get("args") else ():
                expected = [] if overlay.action == "remove" else [overlay.value]
                assert flags.get(overlay.argument, []) == expected, (recipe.id, before["name"])
            untouched = {o.argument for o in covering}
            assert {k: v for k, v in flags.items() if k not in untouched} == {
                k: v for k, v in upstream.items() if k not in untouched
            }


def test_conformance_lists_applied_overlays_as_intended_and_reports_a_planted_argument():
    covered = [r for r in RECIPES if any(_gpu(r) and o.covers(r.id, _gpu(r), True, o.argument) for o in APPLIED)]
    recipe = covered[0]
    config_map, dgd = copy.deepcopy(recipe.config_map), copy.deepcopy(recipe.dgd)
    apply_serving_overlays(dgd, recipe.id, _gpu(recipe), OVERLAYS)
    replicas = {c["name"]: c["replicas"] for c in recipe.dgd["spec"]["components"]}
    assert dgd != recipe.dgd
    assert target_problems(recipe, replicas, config_map, dgd) == []
    worker = next(c for c in dgd["spec"]["components"] if c["type"] in WORKER_COMPONENT_TYPES)
    worker["podTemplate"]["spec"]["containers"][0]["args"].append("--planted-argument")
    (problem,) = target_problems(recipe, replicas, config_map, dgd)
    assert "--planted-argument" in problem
