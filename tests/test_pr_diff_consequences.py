"""The PR comment leads with consequences: the planted pull requests of issue 31 on the committed prod stack,
rendered in-process, each read from the comment's first lines. Expected numbers come from the data (instance
prices, GPUs per node, the rollout model's node-boot time, the catalog's published figures, prod's `demand:`),
never from literals."""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
from pr_diff_helpers import prefixed, render_raw, stack_raw

from serving_stack.config.aws import NodePoolConfig
from serving_stack.facts.aws import AwsCatalog, load_aws_catalog
from serving_stack.facts.catalog import load_catalog
from tools.pr_diff.demand import stack_criteria
from tools.pr_diff.markdown import render_markdown
from tools.pr_diff.records import Render
from tools.pr_diff.sample import plant_root_volume, plant_targets
from tools.pr_diff.stack_diff import StackDiff, diff_stack
from tools.rollout.durations import GPU_NODE_BOOT
from tools.rollout.rules import load_rules
from tools.rollout.rules import load_rules as load_rollout_rules

STACK = "prod"
CATALOG, AWS = load_catalog(), load_aws_catalog()
GPU_NODE_MINUTES = load_rollout_rules().span(GPU_NODE_BOOT).typical
HEADLINE_COST = re.compile(r"\*\*([+-][\d,]+\.\d\d) \$/h \(([+-][\d.]+)%\)\*\*")


def plant_unknown_price(config: dict[str, Any], aws: AwsCatalog) -> tuple[str, str, str]:
    """The first priced pool moved to an unpriced instance type of its GPU: (pool, type before, after)."""
    types = aws.instance_types
    for pool in config["aws"]["nodePools"]:
        before = pool["instanceType"]
        unpriced = [
            t for t, facts in types.items() if facts.gpu == types[before].gpu and facts.onDemandUsdPerHour is None
        ]
        if types[before].onDemandUsdPerHour is not None and unpriced:
            pool["instanceType"] = unpriced[0]
            return str(pool["name"]), before, unpriced[0]
    raise ValueError("no pool has an unpriced instance type of its GPU in catalog/instance_types.yaml")


@functools.cache
def base() -> Render:
    return render_raw(stack_raw(STACK), STACK, policies=True)


def diff_to(raw: dict, policies: bool = False) -> tuple[StackDiff, str, Render]:
    head = render_raw(raw, STACK, policies)
    diff = diff_stack(
        STACK,
        base(),
        head,
        load_rules(),
        criteria=stack_criteria(prefixed(raw), CATALOG),
        base_criteria=stack_criteria(prefixed(stack_raw(STACK)), CATALOG),
    )
    return diff, render_markdown(diff, "base", "head"), head


def lead(text: str) -> list[str]:
    """The lines above the first folded section: what a reviewer reads without opening anything."""
    return text.split("<details>")[0].splitlines()


def _gpu_of_target(target_id: str) -> str | None:
    return AWS.gpu_of_product(CATALOG.recipe(target_id).gpu_products[0])


def test_three_added_targets_lead_with_the_cost_change_and_name_the_one_below_demand():
    raw = stack_raw(STACK)
    planted = plant_targets(raw, CATALOG, AWS)
    _, text, head = diff_to(raw, policies=True)
    first, *rest = lead(text)

    pools = {p["name"]: p for p in raw["aws"]["nodePools"]}
    price = {name: AWS.instance_types[p["instanceType"]].onDemandUsdPerHour for name, p in pools.items()}
    change = sum(price[name] * (after - before) for name, (before, after) in planted.grown.items())
    priced_base = sum(price[name] * before for name, (before, _) in planted.grown.items()) + sum(
        e["usdPerHour"] or 0.0 for e in base().outputs["endpoints"] if e["kind"] == "sagemaker"
    )
    found = HEADLINE_COST.search(first)
    assert first.startswith(f"### `{STACK}`: **") and found, first
    assert float(found.group(1).replace(",", "")) == pytest.approx(change, abs=0.02)
    assert float(found.group(2)) == pytest.approx(100 * change / priced_base, abs=0.5)

    failing, *meeting = planted.added
    slo = raw["demand"]["slo"]
    performance = CATALOG.recipe(failing).entry.performance
    per_million = next(e for e in head.outputs["endpoints"] if e["id"] == failing)["usdPerMillionOutputTokens"]
    (line,) = [line for line in rest if f"`{failing}`" in line]
    assert "fails" in line and "new target" in line
    assert f"{performance.tokensPerSecondPerUser:g} tok/s/user, below {slo['minTokensPerSecondPerUser']:g}" in line
    assert per_million is not None and f"${per_million:,.2f} per 1M" in line
    assert not any(f"`{target}`" in line for target in meeting for line in rest)
    assert any(line.startswith("- 🛡️ Policy pack: ✅ no mandatory violation") for line in rest)
    assert not re.search(r"\d+ added", first), "no headline of bare counts"


def test_a_root_volume_change_names_the_pool_its_time_gpu_hours_and_the_targets_it_interrupts():
    raw = stack_raw(STACK)
    pool_name = plant_root_volume(raw, NodePoolConfig.model_fields["rootVolumeGiB"].default)
    _, text, _ = diff_to(raw)
    first, *rest = lead(text)

    pool = next(p for p in raw["aws"]["nodePools"] if p["name"] == pool_name)
    instance = AWS.instance_types[pool["instanceType"]]
    minutes = pool["desiredSize"] * GPU_NODE_MINUTES
    gpu_hours = pool["desiredSize"] * instance.gpus * GPU_NODE_MINUTES / 60
    assert f"GPU pool `{pool_name}` (~{minutes:g} min, ~{gpu_hours:.1f} GPU-hours)" in first
    assert first.index("$/h") < first.index(pool_name), "the cost comes first"
    (roll,) = [line for line in rest if "🔁" in line]
    on_pool = {t["id"] for t in raw["targets"] if _gpu_of_target(t["id"]) == instance.gpu}
    assert on_pool, "the pool serves a target"
    for target in raw["targets"]:
        assert (f"`{target['id']}`" in roll) == (target["id"] in on_pool), (target, roll)
    assert "launch template" in roll


def test_a_price_that_becomes_unknown_reads_unknown_never_a_negative_total():
    raw = stack_raw(STACK)
    pool, before, after = plant_unknown_price(raw, AWS)
    _, text, _ = diff_to(raw)
    first, *rest = lead(text)
    assert first.startswith(f"### `{STACK}`: **$/h change unknown**")
    (cost,) = [line for line in rest if line.startswith("- 💲")]
    assert f"GPU pool `{pool}`" in cost and before in cost and after in cost and "unknown" in cost
    row = next(line for line in text.splitlines() if line.startswith(f"| GPU pool `{pool}`"))
    assert row.endswith("| unknown |"), row
    negative = re.compile(r"(?<![\w.-])[-−]\s?\$?\d")
    assert not negative.search(first + cost), (first, cost)
    assert not negative.search(row)
