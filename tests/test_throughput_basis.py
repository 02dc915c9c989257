"""Honest throughput: the published table's speculative rows were measured with synthetic acceptance (a fixed
acceptance length); every tok/s, tok/s/user and $/1M figure the stack prints or outputs says so, or is scaled
by the stack's `targets[].acceptanceLength` and says that."""

from __future__ import annotations

import re

import pytest
from stack_helpers import BASE_CONFIG, rendered_stack, run_config

from serving_stack.config import ConfigError
from serving_stack.contract.outputs import StackOutputs
from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.strict_files import DATA_DIR
from tools.absorb.upstream import published_figures
from tools.summary import summary_markdown

pytestmark = pytest.mark.catalog_driven
CATALOG = load_catalog()
FIGURE = re.compile(r"^\**\$?[\d,]+(\.\d+)?\**$")


def _tables(markdown: str, heading: str) -> list[dict[str, str]]:
    """The rows of the first table under `## <heading>`, as header -> cell."""
    section = markdown.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in lines[2:]]


def test_every_throughput_figure_of_the_prod_summary_carries_its_basis() -> None:
    summary = summary_markdown("prod", rendered_stack("prod"))
    tables = {
        "Serving endpoints": ("expected output tok/s", "tok/s/user"),
        "Cost per 1M output tokens": ("$/1M output tokens there", "cheapest on-demand", "cheapest capacity block"),
    }
    figures = 0
    for heading, columns in tables.items():
        for row in _tables(summary, heading):
            shown = [row[c].split(" ")[0] for c in columns if FIGURE.match(row[c].split(" ")[0])]
            figures += len(shown)
            target = row.get("endpoint", row.get("target", "")).strip("`")
            if shown:
                basis = row["acceptance basis"]
                recipe = CATALOG.recipe(target)
                synthetic = recipe.entry.performance.syntheticAcceptanceLength
                assert basis != "n/a", (heading, target)
                if recipe.draft_tokens is None:
                    assert "without speculative decoding" in basis
                elif synthetic is not None:
                    assert f"synthetic acceptance length {synthetic:g}" in basis, (heading, target, basis)
    assert figures


def test_every_dynamo_endpoint_of_the_prod_outputs_states_its_basis() -> None:
    outputs = StackOutputs.model_validate(rendered_stack("prod").outputs)
    dynamo = [e for e in outputs.endpoints if e.kind == "dynamo"]
    assert dynamo
    for endpoint in dynamo:
        assert endpoint.throughputBasis, endpoint.id


def _speculative_target() -> str:
    return next(
        r.id
        for r in CATALOG.recipes.values()
        if r.draft_tokens and r.entry.performance.syntheticAcceptanceLength and not r.disaggregated
    )


def test_a_stated_acceptance_length_scales_every_figure_and_says_so() -> None:
    target = _speculative_target()
    recipe = CATALOG.recipe(target)
    performance = recipe.entry.performance
    acceptance = round(performance.syntheticAcceptanceLength * 0.8, 3)
    base = {**BASE_CONFIG, "targets": [{"id": target}]}
    published = StackOutputs.model_validate(run_config(base).outputs).endpoints[0]
    scaled_run = run_config({**base, "targets": [{"id": target, "acceptanceLength": acceptance}]})
    scaled = StackOutputs.model_validate(scaled_run.outputs).endpoints[0]
    factor = acceptance / performance.syntheticAcceptanceLength
    assert scaled.expectedTokensPerSecondPerUser == pytest.approx(performance.tokensPerSecondPerUser * factor, 0.01)
    assert scaled.expectedOutputTokensPerSecond == pytest.approx(published.expectedOutputTokensPerSecond * factor, 0.01)
    if published.usdPerMillionOutputTokens is not None:
        assert scaled.usdPerMillionOutputTokens == pytest.approx(published.usdPerMillionOutputTokens / factor, 0.01)
    assert "targets[0].acceptanceLength" in scaled.throughputBasis and "scaled" in scaled.throughputBasis
    summary = summary_markdown("test", scaled_run)
    assert scaled.throughputBasis in summary


def test_an_acceptance_length_the_target_cannot_have_is_refused() -> None:
    plain = next(r for r in CATALOG.recipes.values() if r.draft_tokens is None)
    target = _speculative_target()
    too_long = CATALOG.recipe(target).draft_tokens + 1.5
    for target_id, acceptance in ((plain.id, 2.0), (target, too_long)):
        with pytest.raises(ConfigError, match=r"^targets\[0\]\.acceptanceLength: "):
            run_config({**BASE_CONFIG, "targets": [{"id": target_id, "acceptanceLength": acceptance}]})


def test_the_catalog_holds_the_synthetic_length_of_every_published_speculative_row() -> None:
    table = published_figures(DATA_DIR / "recipes")  # every table of the vendored revision
    for recipe in CATALOG.recipes.values():
        row = table.get(recipe.id)
        synthetic = recipe.entry.performance.syntheticAcceptanceLength
        assert synthetic == (row.figures["syntheticAcceptanceLength"] if row else None), recipe.id
        assert (synthetic is not None) <= (recipe.draft_tokens is not None), recipe.id
