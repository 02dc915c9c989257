"""The catalog is data: 30 upstream targets with their published performance, extensible without code."""
from __future__ import annotations

import shutil

import pytest
import yaml

from serving_stack.facts.catalog import CATALOG_DIR, load_catalog
from serving_stack.errors import ConfigError

FAILING_PUBLISHED_CRITERIA = {
    "vllm/agg-gb200-dflash", "trtllm/agg-b200", "trtllm/agg-b200-mtp", "trtllm/agg-h100-mtp",
    "trtllm/agg-h200-mtp", "trtllm/agg-gb200", "trtllm/agg-gb200-mtp",
}


def test_thirty_targets_with_their_shape():
    catalog = load_catalog()
    assert len(catalog.recipes) == 30
    disaggregated = {t for t, r in catalog.recipes.items() if r.disaggregated}
    assert len(disaggregated) == 9 and all(t.startswith("vllm/disagg-") for t in disaggregated)
    assert {r.backend for r in catalog.recipes.values()} == {"vllm", "trtllm"}
    assert catalog.recipe("vllm/agg-h100-dspark-kv-router").gpu_products == ["NVIDIA-H100-80GB-HBM3"]
    assert catalog.recipe("vllm/disagg-gb200-dspark").checkpoints == [
        "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4",
        "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4-DSpark",
    ]


def test_published_performance_and_criteria():
    catalog = load_catalog()
    kv_router = catalog.recipe("vllm/agg-b200-dspark-kv-router").entry.performance
    assert (kv_router.concurrency, kv_router.ttftP50Ms, kv_router.outputTokensPerSecondPerGpu, kv_router.tokensPerSecondPerUser) == (
        96, 295.03, 2507.70, 104.49
    )
    failing = {t for t, r in catalog.recipes.items() if not catalog.criteria.passed_by(r.entry.performance)}
    assert failing == FAILING_PUBLISHED_CRITERIA


@pytest.fixture()
def catalog_copy(tmp_path):
    root = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, root)
    return root


def test_a_new_target_is_a_data_change(catalog_copy):
    source = catalog_copy / "recipes/vllm/agg-h200-mtp/deploy.yaml"
    new_dir = catalog_copy / "recipes/vllm/agg-h200-mtp-long"
    new_dir.mkdir()
    (new_dir / "deploy.yaml").write_text(source.read_text().replace("vllm-agg-h200-mtp", "vllm-agg-h200-mtp-long"))
    data = yaml.safe_load((catalog_copy / "targets.yaml").read_text())
    data["targets"].append({
        "id": "vllm/agg-h200-mtp-long", "manifest": "recipes/vllm/agg-h200-mtp-long/deploy.yaml",
        "speculativeDecoding": "MTP", "routing": "single",
        "performance": {"concurrency": 8, "ttftP50Ms": 6100.0, "outputTokensPerSecondPerGpu": 900.0, "tokensPerSecondPerUser": 110.0},
    })
    (catalog_copy / "targets.yaml").write_text(yaml.safe_dump(data))
    catalog = load_catalog(catalog_copy)
    added = catalog.recipe("vllm/agg-h200-mtp-long")
    assert added.name == "vllm-agg-h200-mtp-long" and added.gpu_products == ["NVIDIA-H200"]
    assert not catalog.criteria.passed_by(added.entry.performance)  # TTFT p50 6.1 s > 5 s


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["targets"][0]["performance"].update(ttftP50Ms=-1), "catalog/targets.yaml: targets[0].performance.ttftP50Ms: Input should be greater than 0"),
        (lambda d: d["targets"][1].update(routing="random"), "catalog/targets.yaml: targets[1].routing: Input should be 'single', 'kv' or '1P1D'"),
        (lambda d: d["targets"][2].update(manifest="recipes/vllm/nope/deploy.yaml"), "catalog/targets.yaml: targets[2].manifest: file deploy.yaml does not exist"),
        (lambda d: d["targets"].append(dict(d["targets"][0])), "catalog/targets.yaml: targets[30].id: duplicate target id 'vllm/agg-b200-dspark-kv-router'"),
        (lambda d: d["targets"][0].update(tps=1), "catalog/targets.yaml: targets[0].tps: unknown key; allowed: id, manifest"),
    ],
)
def test_bad_catalog_data_names_the_key(catalog_copy, mutate, expected):
    data = yaml.safe_load((catalog_copy / "targets.yaml").read_text())
    mutate(data)
    (catalog_copy / "targets.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as raised:
        load_catalog(catalog_copy)
    assert str(raised.value).startswith(expected)


def test_a_manifest_without_a_dgd_is_rejected(catalog_copy):
    path = catalog_copy / "recipes/vllm/agg-h100-mtp/deploy.yaml"
    path.write_text(path.read_text().split("\n---\n")[0])
    with pytest.raises(ConfigError, match=r"targets\[\d+\]\.manifest: .* holds \['ConfigMap'\]; allowed: exactly one ConfigMap"):
        load_catalog(catalog_copy)


def test_vendored_recipes_are_verbatim_upstream():
    from stack_helpers import RECIPES_REFERENCE, reference_exists

    if not reference_exists():
        pytest.skip("../shared/reference is not beside this checkout")
    for path in RECIPES_REFERENCE.rglob("*.yaml"):
        assert (CATALOG_DIR / "recipes" / path.relative_to(RECIPES_REFERENCE)).read_bytes() == path.read_bytes()
