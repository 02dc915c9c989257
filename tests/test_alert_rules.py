"""The generated alert rules pass the real `promtool check rules`, and `promtool test rules` shows every alert
firing just past its threshold and silent just short of it, for an aggregated and a disaggregated EFA target
of the catalog; thresholds come from catalog/targets.yaml criteria and catalog/monitoring.yaml SLOs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from alert_scenarios import Scenarios
from monitoring_helpers import NAMESPACE, canary_alerting, catalog_targets, groups_for, thresholds
from promtool_helpers import check_rules, run_rule_tests

from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.monitoring import load_metrics, load_monitoring
from serving_stack.plan.monitoring import AlertThresholds, WatchedTarget

pytestmark = pytest.mark.catalog_driven


def two_targets() -> list[WatchedTarget]:
    """An aggregated target whose DGD name prefixes another catalog DGD (the scenarios' neighbour,
    `<dgd>-kv-router`, exists for real) and a disaggregated one."""
    targets = catalog_targets()
    names = {t.dgd_name for t in targets}
    aggregated = next(t for t in targets if not t.kv_over_libfabric and f"{t.dgd_name}-kv-router" in names)
    return [aggregated, next(t for t in targets if t.kv_over_libfabric)]


def promtool_cases(
    targets: list[WatchedTarget], rules_limits: AlertThresholds, series_limits: AlertThresholds
) -> tuple[list, list]:
    groups = groups_for(targets, rules_limits)
    cases = []
    every = {
        t.target_id: Scenarios(NAMESPACE, t, series_limits, load_monitoring(), load_metrics(), canary_alerting())
        for t in targets
    }
    for target_id, scenarios in every.items():
        others = [
            series for other_id, other in every.items() if other_id != target_id for series in other.healthy_canary()
        ]
        rules = [r for g in groups for r in g["rules"] if r["labels"].get("target", target_id) == target_id]
        cases += [scenarios.test_case(rule, firing, others) for rule in rules for firing in (True, False)]
    return groups, cases


def test_promtool_check_rules_accepts_the_rules_of_every_catalog_target(tmp_path: Path):
    groups = groups_for(catalog_targets(), thresholds())
    result = check_rules(tmp_path, groups)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in groups)} rules found" in result.stdout


@pytest.mark.slow  # promtool on every alert twice
def test_every_alert_fires_just_past_its_threshold_and_not_just_short_of_it(tmp_path: Path):
    groups, cases = promtool_cases(two_targets(), thresholds(), thresholds())
    alerts = {r["alert"] for g in groups for r in g["rules"]}
    assert alerts == set(load_monitoring().alerts), "every alert of catalog/monitoring.yaml is generated and tested"
    result = run_rule_tests(tmp_path, groups, cases)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize(
    ("slo_field", "factor"), [("maxKvCacheUsage", 0.9), ("ttftP99Seconds", 1.2), ("maxErrorRatio", 0.8)]
)
@pytest.mark.slow  # promtool once per threshold
def test_promtool_tests_fail_when_a_rule_uses_another_threshold(tmp_path: Path, slo_field: str, factor: float):
    """The scenarios are not vacuous: rules built with a threshold 10-20 % off fail them."""
    good = thresholds()
    off = dataclasses.replace(good, slo=good.slo.model_copy(update={slo_field: getattr(good.slo, slo_field) * factor}))
    groups, cases = promtool_cases(two_targets()[:1], off, good)
    result = run_rule_tests(tmp_path, groups, cases)
    assert result.returncode != 0
    assert "FAILED" in result.stdout + result.stderr


def test_kv_fallback_alert_only_for_disaggregated_targets_over_libfabric():
    groups = groups_for(catalog_targets(), thresholds())
    by_target: dict[str, set[str]] = {}
    for rule in (r for g in groups for r in g["rules"]):
        by_target.setdefault(rule["labels"]["target"], set()).add(rule["alert"])
    for recipe in load_catalog().recipes.values():
        assert ("NemotronKvTransferSlowerThanFabric" in by_target[recipe.id]) == recipe.disaggregated
