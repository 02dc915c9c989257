"""A target upstream has not benchmarked: its figures are `unknown` in the catalog, null in the outputs
contract, n/a in summary.md, its criteria verdict unknown (never a guessed pass), and no alert is set
relative to a figure that does not exist."""

from __future__ import annotations

import dataclasses

import pytest
from catalog_picks import pick
from monitoring_helpers import groups_for, thresholds

import tools.summary
from serving_stack.contract.outputs import CONTRACT_VERSION, ServingEndpoint
from serving_stack.facts.catalog import Catalog, Performance, Recipe, load_catalog
from serving_stack.plan.monitoring import watched_target
from tools.mock_runtime import ProgramRun

pytestmark = pytest.mark.catalog_driven
UNKNOWN = dict.fromkeys(Performance.model_fields, "unknown")


def unpublished(recipe: Recipe) -> Recipe:
    entry = recipe.entry.model_copy(update={"performance": Performance(**UNKNOWN)})
    return Recipe(entry, recipe.config_map, recipe.dgd)


def test_the_summary_shows_n_a_for_every_unpublished_figure_and_the_verdict(monkeypatch):
    catalog = load_catalog()
    recipe = unpublished(pick(disaggregated=False))
    monkeypatch.setattr(
        tools.summary,
        "load_catalog",
        lambda: Catalog(catalog.data, {**catalog.recipes, recipe.id: recipe}, catalog.model_cache),
    )
    endpoint = ServingEndpoint(
        id=recipe.id,
        kind="dynamo",
        servedModelName=recipe.served_model_name,
        url="http://x:8000/v1",
        gpus=1,
        expectedOutputTokensPerSecond=None,
        expectedTokensPerSecondPerUser=None,
        meetsPublishedCriteria=None,
    )
    run = ProgramRun(
        resources=[], outputs={"contractVersion": CONTRACT_VERSION, "endpoints": [endpoint.model_dump(mode="json")]}
    )
    summary = tools.summary.summary_markdown("test", run)
    assert f"| `{recipe.id}` | dynamo | 1 | n/a | n/a | n/a | n/a | `http://x:8000/v1` |" in summary
    assert "**Total:** 1 GPUs, 0.00 expected output tok/s." in summary


def test_no_kv_fabric_alert_is_set_relative_to_an_unknown_ttft():
    recipe = pick(disaggregated=True, fabric="efa")
    known = dataclasses.replace(watched_target(recipe.id, recipe.dgd, 500.0), kv_over_libfabric=True)
    unknown = dataclasses.replace(known, published_ttft_p50_seconds=None)

    def alerts(target) -> set[str]:
        return {rule["alert"] for group in groups_for([target], thresholds()) for rule in group["rules"]}

    assert "NemotronKvTransferSlowerThanFabric" in alerts(known)
    assert alerts(known) - alerts(unknown) == {"NemotronKvTransferSlowerThanFabric"}
