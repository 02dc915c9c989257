"""The pinned Dynamo platform and the DGDs the stack renders agree: every field of every rendered DGD is in the
CRD the pinned operator installs (schemas/crds/), or the render fails naming the target and the path."""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

import pytest
from stack_helpers import BASE_CONFIG, DGD_TYPE, all_targets_config, assert_rejected_before_any_resource, run_config

import serving_stack.plan.serving as serving
from serving_stack.facts.catalog import load_catalog, load_platform
from serving_stack.facts.crds import CRD_DIR, pruned_paths, served_schema
from tools.mock_runtime import plain_numbers

pytestmark = pytest.mark.catalog_driven
DGD_API = ("nvidia.com/v1beta1", "DynamoGraphDeployment")
PROVENANCE = CRD_DIR / "PROVENANCE.md"


def test_every_field_of_every_rendered_dgd_is_in_the_pinned_crd() -> None:
    dgds = [plain_numbers(r.inputs) for r in run_config(all_targets_config()).resources if r.type == DGD_TYPE]
    assert len(dgds) == len(load_catalog().recipes)
    for dgd in dgds:
        assert pruned_paths(dgd) == [], dgd["metadata"]["name"]


def _first_worker(dgd: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return next((i, c) for i, c in enumerate(dgd["spec"]["components"]) if c["type"] != "frontend")


def test_a_field_the_crd_lacks_fails_the_render_naming_the_target_and_the_path(monkeypatch) -> None:
    render = serving.render_target

    def planted(*args: Any, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        config_map, dgd = render(*args, **kwargs)
        _, worker = _first_worker(dgd)
        worker["podTemplate"]["spec"]["containers"][0]["cacheKey"] = "planted"
        return config_map, dgd

    monkeypatch.setattr(serving, "render_target", planted)
    index, _ = _first_worker(load_catalog().recipe(BASE_CONFIG["targets"][0]["id"]).copy_manifests()[1])
    path = f"spec.components[{index}].podTemplate.spec.containers[0].cacheKey"
    assert_rejected_before_any_resource(BASE_CONFIG, f"targets[0].id: {BASE_CONFIG['targets'][0]['id']!r}: {path}")


@pytest.mark.parametrize(
    ("field", "value", "pruned"),
    [
        ("scalingAdapter", {"enabled": True}, ["scalingAdapter.enabled"]),  # an object without properties
        ("scalingAdapter", {}, []),
        ("compilationCache", {"pvcName": "c", "mountPath": "/c", "subPath": "k"}, ["compilationCache.subPath"]),
        ("podTemplate", {"metadata": {"labels": {"any-key": "kept"}}}, []),  # a map: every key is data
    ],
)
def test_pruning_follows_the_structural_schema(field: str, value: Any, pruned: list[str]) -> None:
    dgd = copy.deepcopy(load_catalog().recipe(BASE_CONFIG["targets"][0]["id"]).copy_manifests()[1])
    index, worker = _first_worker(dgd)
    worker[field] = {**worker.get(field, {}), **value}
    assert pruned_paths(dgd) == [f"spec.components[{index}].{p}" for p in pruned]


def test_every_vendored_crd_matches_the_checksum_its_provenance_records() -> None:
    pairs = re.findall(r"`([0-9a-f]{64})  ([\w.-]+\.yaml)`", PROVENANCE.read_text())
    recorded = {name: digest for digest, name in pairs}
    assert set(recorded) == {p.name for p in CRD_DIR.glob("*.yaml")}
    for name, digest in recorded.items():
        assert hashlib.sha256((CRD_DIR / name).read_bytes()).hexdigest() == digest, name


def test_the_render_warns_while_the_crd_is_not_the_pinned_releases_own() -> None:
    platform = load_platform()
    warning = platform.crd.warning(platform.chart)
    assert (warning is None) == (platform.crd.releaseTag == f"v{platform.chart.version}")
    assert served_schema(*DGD_API)["properties"]["spec"]["properties"]["components"]
