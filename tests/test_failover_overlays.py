"""`catalog/serving_overlays.yaml` accounts for every engine argument in which a vLLM target differs from the
model's own vLLM recipe (the SageMaker endpoints'): one entry per difference, none that matches nothing, and
a proposed value that is the recipe's for the target's GPU. Recomputed from the catalog, so an absorbed
upstream revision that adds or removes a difference fails here until the data says what to do about it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

import pytest

from serving_stack.facts import load_facts
from serving_stack.facts.aws import load_aws_catalog
from serving_stack.facts.catalog import Recipe
from serving_stack.facts.serving_overlays import Overlay, ServingOverlays, load_serving_overlays
from serving_stack.plan.serving import flag_values

pytestmark = pytest.mark.catalog_driven

FACTS = load_facts()
OVERLAYS = load_serving_overlays()
ABSENT = "<absent>"


def _flags(words: list[str]) -> dict[str, Optional[str]]:
    """The last value of each flag of one command line (the product's own argument reader)."""
    return {flag: values[-1] for flag, values in flag_values(words).items()}


def _gpu(recipe: Recipe) -> Optional[str]:
    """The target's GPU, or None for a GPU catalog/gpus.yaml does not hold yet (an absorbed revision can add one;
    `make absorb` names it, and no stack can select such a target, so it has no reference to differ from)."""
    gpus = {load_aws_catalog().gpu_of_product(label) for label in recipe.gpu_products}
    assert len(gpus) == 1, (recipe.id, gpus)
    gpu = gpus.pop()
    return None if gpu is None else str(gpu)


def _reference(gpu: str, data: ServingOverlays) -> dict[str, Optional[str]]:
    arguments = FACTS.lmi.repositories[data.reference.repository].engineArguments
    return arguments.for_architecture(data.gpuArchitectures[gpu])


def _vllm_recipes() -> list[Recipe]:
    """The vLLM targets serving the reference's checkpoint (another checkpoint, e.g. an absorbed BF16 variant,
    legitimately differs in its quantization arguments and has no reference here)."""
    return [
        recipe
        for recipe in FACTS.catalog.recipes.values()
        if recipe.dgd["spec"].get("backendFramework") == "vllm" and OVERLAYS.reference.repository in recipe.checkpoints
    ]


def differences(data: ServingOverlays = OVERLAYS) -> Iterator[tuple[str, str, str, bool, str, Any, Any]]:
    """(target, gpu, component, is worker, argument, the target's value, the reference's) per difference."""
    for recipe in _vllm_recipes():
        gpu = _gpu(recipe)
        if gpu is None:
            continue
        reference = {k: v for k, v in _reference(gpu, data).items() if k not in data.responseArguments}
        workers = {component["name"] for component in recipe.worker_components()}
        for component in recipe.components:
            worker = component["name"] in workers
            for container in component["podTemplate"]["spec"]["containers"]:
                flags = _flags([*container.get("command", []), *container.get("args", [])])
                for argument in data.droppedByReference:
                    if argument in flags:
                        yield recipe.id, gpu, component["name"], worker, argument, flags[argument], ABSENT
                for argument, value in reference.items() if worker else ():
                    if flags.get(argument, ABSENT) != value:
                        yield recipe.id, gpu, component["name"], worker, argument, flags.get(argument, ABSENT), value


def _covering(data: ServingOverlays, target: str, gpu: str, worker: bool, argument: str) -> list[Overlay]:
    return [overlay for overlay in data.overlays if overlay.covers(target, gpu, worker, argument)]


def test_the_recipes_differ_from_the_reference_somewhere():
    assert list(differences())


def test_each_difference_is_accounted_for_once():
    for target, gpu, component, worker, argument, value, wanted in differences():
        covering = _covering(OVERLAYS, target, gpu, worker, argument)
        assert len(covering) == 1, (target, component, argument, value, wanted, covering)


def test_no_overlay_matches_nothing():
    found = list(differences())
    for overlay in OVERLAYS.overlays:
        assert any(overlay.covers(t, g, w, a) for t, g, _, w, a, _, _ in found), overlay


def test_a_proposed_value_is_the_reference_value():
    for target, gpu, _, worker, argument, _, wanted in differences():
        (overlay,) = _covering(OVERLAYS, target, gpu, worker, argument)
        if overlay.action == "set":
            assert overlay.value == wanted, (target, argument, overlay.value, wanted)
        if overlay.action == "remove":
            assert wanted == ABSENT, (target, argument)


def test_the_issue_names_are_among_the_differences():
    """What issue 35 names: --trust-remote-code kept, --kv-cache-dtype fp8 and the Hopper humming backends
    missing on H200, 512 sequences where the recipe's Hopper value is 256, MTP targets without the Mamba
    cache mode while prefix caching is on."""
    found = {(t, a, v) for t, _, _, _, a, v, _ in differences()}
    h200 = [r.id for r in _vllm_recipes() if _gpu(r) == "h200"]
    mtp = [r.id for r in _vllm_recipes() if r.entry.speculativeDecoding == "MTP" and r.id.startswith("vllm/agg-")]
    assert h200 and mtp
    assert all((t, "--trust-remote-code", None) in found for t in h200 + mtp)
    assert all((t, "--kv-cache-dtype", ABSENT) in found for t in h200)
    assert all((t, "--moe-backend", ABSENT) in found and (t, "--linear-backend", ABSENT) in found for t in h200)
    assert any((t, "--max-num-seqs", "512") in found for t in h200)
    assert all((t, "--mamba-cache-mode", ABSENT) in found for t in mtp)


def test_a_planted_difference_is_unaccounted(monkeypatch):
    """An upstream revision that drops --mamba-cache-mode from a DSpark target: no overlay covers it."""
    recipe = next(r for r in _vllm_recipes() if r.entry.speculativeDecoding == "DSpark")
    worker = recipe.worker_components()[0]
    container = worker["podTemplate"]["spec"]["containers"][0]
    args = list(container["args"])
    at = args.index("--mamba-cache-mode")
    monkeypatch.setitem(container, "args", args[:at] + args[at + 2 :])
    unaccounted = [d for d in differences() if not _covering(OVERLAYS, d[0], d[1], d[3], d[4])]
    assert [(d[0], d[4]) for d in unaccounted] == [(recipe.id, "--mamba-cache-mode")]
