"""The canary rules beyond their thresholds (test_alert_rules.py): `NemotronCanaryStale` also fires when Prometheus
cannot scrape the canary (`up == 0`) and when it has no canary target at all, each checked with the real
`promtool test rules`; without canaries there is no canary group; every name the rules use is the data file's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alert_scenarios import Scenarios, constant, series
from monitoring_helpers import NAMESPACE, canary_alerting, catalog_targets, thresholds
from promtool_helpers import run_rule_tests

from serving_stack.facts.monitoring import load_metrics, load_monitoring
from serving_stack.plan.monitoring import rule_groups

RUNBOOKS = "https://example.invalid/docs/monitoring.md"
METRICS = load_metrics()


def one_target() -> tuple[Scenarios, list[dict[str, Any]]]:
    target = catalog_targets()[0]
    groups = rule_groups(NAMESPACE, [target], thresholds(), load_monitoring(), METRICS, RUNBOOKS, canary_alerting())
    scenarios = Scenarios(NAMESPACE, target, thresholds(), load_monitoring(), METRICS, canary_alerting())
    return scenarios, groups


def stale_case(scenarios: Scenarios, input_series: list[dict[str, str]], fires: bool) -> dict[str, Any]:
    labels = {
        "alertname": "NemotronCanaryStale",
        "namespace": NAMESPACE,
        "severity": "warning",
        "target": scenarios.target.target_id,
    }
    expected = [{"exp_labels": {k: v for k, v in labels.items() if k != "alertname"}}] if fires else []
    return {
        "interval": "1m",
        "input_series": input_series,
        "alert_rule_test": [
            {"eval_time": f"{scenarios.eval_minutes}m", "alertname": "NemotronCanaryStale", "exp_alerts": expected}
        ],
    }


def without_annotations(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The canary group only, annotations dropped: these cases check when the rule fires, not its text."""
    (canary,) = [g for g in groups if g["name"] == "nemotron-canary"]
    return [{**canary, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in canary["rules"]]}]


def test_a_canary_prometheus_cannot_scrape_or_does_not_see_is_stale(tmp_path: Path):
    scenarios, groups = one_target()
    up = METRICS.metric("prometheus", "up").name
    last_probe = METRICS.metric("canary", "lastProbeTimestamp").name
    fresh = series(last_probe, scenarios.canary_sample(), f"0+60x{scenarios.points}")
    neighbour = scenarios.canary_scrape(neighbour=True)
    cases = [
        # the scrapes fail (up 0) while the probe timestamps look fresh: only the `up` branch can fire
        stale_case(scenarios, [fresh, series(up, scenarios.canary_scrape(), constant(0.0, scenarios.points))], True),
        # no canary target: only a neighbour target's canary, healthy
        stale_case(scenarios, [series(up, neighbour, constant(1.0, scenarios.points))], True),
        # healthy: fresh probes, scraped
        stale_case(scenarios, scenarios.healthy_canary(), False),
    ]
    result = run_rule_tests(tmp_path, without_annotations(groups), cases)
    assert result.returncode == 0, result.stdout + result.stderr


def test_without_canaries_there_is_no_canary_group():
    targets = catalog_targets()[:2]
    groups = rule_groups(NAMESPACE, targets, thresholds(), load_monitoring(), METRICS, RUNBOOKS, None)
    assert "nemotron-canary" not in {g["name"] for g in groups}
    assert len(groups) == len(targets)


def test_the_canary_rules_read_the_names_of_the_data_file():
    _, groups = one_target()
    (canary,) = [g for g in groups if g["name"] == "nemotron-canary"]
    expressions = " ".join(r["expr"] for r in canary["rules"])
    for key in ("probeSuccess", "lastProbeTimestamp"):
        assert METRICS.metric("canary", key).name in expressions
    assert f"{METRICS.metric('prometheus', 'up').name}{{" in expressions
    assert {r["alert"] for r in canary["rules"]} == {
        a for a in load_monitoring().alerts if a.startswith("NemotronCanary")
    }
