"""The catalog is data: every vendored upstream manifest is a target, its figures are the vendored table's
row (or unknown), and bad data stops the program with the file and key named. Nothing here names a target."""

from __future__ import annotations

import os
import shutil

import pytest
import yaml
from catalog_picks import pick

from serving_stack.errors import ConfigError
from serving_stack.facts.catalog import CATALOG_DIR, Performance, load_catalog
from tools.absorb.upstream import published_figures, read_upstream

pytestmark = pytest.mark.catalog_driven
RECIPES = CATALOG_DIR / "recipes"
# The revision the shared reference copies (../shared/reference/dynamo-recipes/FACTS.md, "Provenance").
SEED_REFERENCE_COMMIT, SEED_REFERENCE_DATE = "70d2ef43", "2026-08-11"


def test_every_vendored_manifest_is_a_target_and_nothing_else():
    catalog, upstream = load_catalog(), read_upstream(RECIPES)
    assert set(catalog.recipes) == set(upstream.targets)
    for target_id, target in upstream.targets.items():
        assert catalog.recipe(target_id).entry.manifest == f"recipes/{target.manifest}"
    assert sorted(job.path for job in catalog.model_cache.jobs) == sorted(
        f"recipes/{p}" for p in upstream.download_jobs
    )
    assert catalog.model_cache.claim == yaml.safe_load((CATALOG_DIR / catalog.data.modelCache.claim).read_text())


def test_what_a_target_is_comes_from_its_manifest():
    for recipe in load_catalog().recipes.values():
        roles = {c["type"] for c in recipe.components}
        assert "frontend" in roles, recipe.id
        assert roles & {"worker", "prefill", "decode"}, recipe.id
        assert recipe.disaggregated == ({"prefill", "decode"} <= roles), recipe.id
        assert recipe.routing.endswith("D") == recipe.disaggregated, recipe.id
        assert recipe.gpu_products, recipe.id
        assert recipe.checkpoints, recipe.id
        assert recipe.served_model_name, recipe.id


def test_figures_are_the_vendored_tables_row_or_unknown():
    rows = published_figures(RECIPES)
    for recipe in load_catalog().recipes.values():
        row = rows.get(recipe.id)
        expected = row.figures if row else dict.fromkeys(Performance.model_fields)
        assert recipe.entry.performance.model_dump() == pytest.approx(expected), recipe.id


@pytest.mark.parametrize(
    ("tps", "ttft", "verdict"),
    [
        (50, 4999, True),
        (49.9, 100, False),
        (60, 5000, False),
        (None, 100, None),
        (60, None, None),
        (None, None, None),
        (10, None, False),
        (None, 9000, False),  # a known failure decides, whatever is unknown
    ],
)
def test_criteria_are_three_valued(tps, ttft, verdict):
    performance = Performance(
        concurrency=8,
        ttftP50Ms=ttft or "unknown",
        outputTokensPerSecondPerGpu="unknown",
        tokensPerSecondPerUser=tps or "unknown",
        syntheticAcceptanceLength="unknown",
    )
    assert load_catalog().criteria.passed_by(performance) is verdict


@pytest.fixture
def catalog_copy(tmp_path):
    root = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, root)
    return root


def _edit_targets(root, mutate) -> None:
    data = yaml.safe_load((root / "targets.yaml").read_text())
    mutate(data)
    (root / "targets.yaml").write_text(yaml.safe_dump(data))


def test_a_new_target_without_figures_is_a_data_change(catalog_copy):
    source = pick(disaggregated=False, backend="vllm")
    directory = catalog_copy / "recipes" / f"{source.id}-long"
    directory.mkdir()
    (directory / "deploy.yaml").write_text(
        (CATALOG_DIR / source.entry.manifest).read_text().replace(source.name, f"{source.name}-long")
    )
    entry = {
        **source.entry.model_dump(),
        "id": f"{source.id}-long",
        "manifest": f"recipes/{source.id}-long/deploy.yaml",
        "performance": dict.fromkeys(Performance.model_fields, "unknown"),
    }
    _edit_targets(catalog_copy, lambda d: d["targets"].append(entry))
    added = load_catalog(catalog_copy).recipe(f"{source.id}-long")
    assert added.name == f"{source.name}-long"
    assert added.gpu_products == source.gpu_products
    assert not added.entry.performance.published
    assert load_catalog(catalog_copy).criteria.passed_by(added.entry.performance) is None


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: d["targets"][0]["performance"].update(ttftP50Ms=-1),
            "catalog/targets.yaml: targets[0].performance.ttftP50Ms: Input should be greater than 0",
        ),
        (
            lambda d: d["targets"][0]["performance"].update(ttftP50Ms="n/a"),
            "catalog/targets.yaml: targets[0].performance.ttftP50Ms: Input should be a valid number",
        ),
        (
            lambda d: d["targets"][1].update(routing="random"),
            "catalog/targets.yaml: targets[1].routing: must be single, kv or <prefill>P<decode>D",
        ),
        (
            lambda d: d["targets"][1].update(routing="9P9D"),
            "catalog/targets.yaml: targets[1].routing: '9P9D', but the manifest says",
        ),
        (
            lambda d: d["targets"][1].update(speculativeDecoding="Medusa"),
            "catalog/targets.yaml: targets[1].speculativeDecoding: 'Medusa', but the manifest says",
        ),
        (
            lambda d: d["targets"][2].update(manifest="recipes/vllm/nope/deploy.yaml"),
            "catalog/targets.yaml: targets[2].manifest: file deploy.yaml does not exist",
        ),
        (
            lambda d: d["targets"].append(dict(d["targets"][0])),
            "catalog/targets.yaml: targets[{count}].id: duplicate target id '{first}'",
        ),
        (
            lambda d: d["targets"][0].update(tps=1),
            "catalog/targets.yaml: targets[0].tps: unknown key; allowed: id, manifest",
        ),
        (
            lambda d: d["modelCache"].update(downloadJobs=[d["modelCache"]["claim"]]),
            "catalog/targets.yaml: modelCache.downloadJobs[0]: holds a 'PersistentVolumeClaim', not a Job",
        ),
    ],
)
def test_bad_catalog_data_names_the_key(catalog_copy, mutate, expected):
    _edit_targets(catalog_copy, mutate)
    with pytest.raises(ConfigError) as raised:
        load_catalog(catalog_copy)
    catalog = load_catalog()
    assert str(raised.value).startswith(expected.format(count=len(catalog.recipes), first=next(iter(catalog.recipes))))


def test_a_manifest_without_a_dgd_is_rejected(catalog_copy):
    path = catalog_copy / pick().entry.manifest
    path.write_text(path.read_text().split("\n---\n")[0])
    with pytest.raises(
        ConfigError, match=r"targets\[\d+\]\.manifest: .* holds \['ConfigMap'\]; allowed: exactly one ConfigMap"
    ):
        load_catalog(catalog_copy)


def test_the_seed_reference_absorbs_into_exactly_its_files(tmp_path):
    """`../shared/reference` holds the seed-era upstream revision. Absorbed into a copy of the catalog, whatever
    revision the catalog is at now, the vendored copy is the reference byte for byte; while the catalog is still
    at that revision the absorb changes nothing."""
    from stack_helpers import RECIPES_REFERENCE

    from tools.absorb.__main__ import absorb

    if not RECIPES_REFERENCE.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{RECIPES_REFERENCE} is missing: CI must lay shared/ beside the checkout")
        pytest.skip(f"{RECIPES_REFERENCE} is not beside this checkout")
    copy = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, copy)
    _, written, _ = absorb(RECIPES_REFERENCE, SEED_REFERENCE_COMMIT, SEED_REFERENCE_DATE, copy, dry_run=False)
    reference = sorted(p.relative_to(RECIPES_REFERENCE) for p in RECIPES_REFERENCE.rglob("*") if p.is_file())
    vendored = sorted(p.relative_to(copy / "recipes") for p in (copy / "recipes").rglob("*") if p.is_file())
    assert vendored == reference
    for relative in reference:
        assert (copy / "recipes" / relative).read_bytes() == (RECIPES_REFERENCE / relative).read_bytes(), relative
    assert written == (load_catalog().data.upstream.commit != SEED_REFERENCE_COMMIT)
