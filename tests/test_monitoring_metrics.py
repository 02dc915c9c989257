"""catalog/metrics.yaml is the one list of metric names: every name the rules and dashboards use is in it,
every name in it is used, templates never spell a name out, and promtool parses every dashboard query."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from monitoring_helpers import catalog_targets, groups_for, thresholds
from promtool_helpers import check_rules

from serving_stack.facts.monitoring import METRIC_REFERENCE, load_dashboard_specs, load_metrics, load_monitoring
from serving_stack.plan.monitoring import dashboard_json

DOCS = Path(__file__).resolve().parent.parent / "docs" / "monitoring.md"
# Grafana's variables, as a query of that dashboard would see them.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$namespace": "nemotron"}
IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def rule_expressions() -> list[str]:
    return [r["expr"] for g in groups_for(catalog_targets(), thresholds()) for r in g["rules"]]


def dashboard_expressions() -> list[str]:
    metrics = load_metrics()
    return [
        t["expr"]
        for spec in load_dashboard_specs()
        for p in dashboard_json(spec, metrics)["panels"]
        for t in p.get("targets", [])
    ]


def series_used(expressions: list[str]) -> set[str]:
    known = {
        series: m.name
        for g in load_metrics().groups.values()
        for m in g.metrics.values()
        for series in ([m.name + s for s in ("_bucket", "_sum", "_count")] if m.type == "histogram" else [m.name])
    }
    return {known[token] for expr in expressions for token in IDENTIFIER.findall(expr) if token in known}


def test_every_listed_metric_is_used_by_a_rule_or_a_dashboard():
    used = series_used(rule_expressions() + dashboard_expressions())
    assert {m.name for g in load_metrics().groups.values() for m in g.metrics.values()} - used == set()


def test_dashboard_templates_name_metrics_only_through_the_data_file():
    """Once the `@group.key` references are taken out, no identifier looks like an exporter's metric."""
    prefixes = tuple(
        {
            prefix.group(0)
            for g in load_metrics().groups.values()
            for m in g.metrics.values()
            if (prefix := re.match(r"[A-Za-z]+[_:]", m.name))
        }
    )  # `up` has no prefix
    for spec in load_dashboard_specs():
        for expr in (q.expr for row in spec.rows for panel in row.panels for q in panel.queries):
            spelled = [t for t in IDENTIFIER.findall(METRIC_REFERENCE.sub("", expr)) if t.startswith(prefixes)]
            assert not spelled, f"{spec.uid}: {expr} spells out {spelled}"


def test_every_metric_has_a_source_and_histograms_are_queried_by_their_series():
    metrics = load_metrics()
    for data in metrics.groups.values():
        for metric in data.metrics.values():
            assert metric.source or data.source
    histograms = {m.name for g in metrics.groups.values() for m in g.metrics.values() if m.type == "histogram"}
    for expr in rule_expressions() + dashboard_expressions():
        bare = {t for t in IDENTIFIER.findall(expr) if t in histograms}
        assert not bare, f"a histogram is queried without _bucket/_sum/_count: {expr}"


def test_promtool_parses_every_dashboard_query(tmp_path: Path):
    expressions = dashboard_expressions()
    for variable, value in GRAFANA_VARIABLES.items():
        expressions = [e.replace(variable, value) for e in expressions]
    assert not [e for e in expressions if "$" in e], "a query uses a Grafana variable the test does not know"
    rules = [{"record": f"dashboard:query:{i}", "expr": e} for i, e in enumerate(expressions)]
    result = check_rules(tmp_path, [{"name": "dashboards", "rules": rules}])
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_runbook_section_in_the_docs():
    headings = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in DOCS.read_text().splitlines()
        if line.startswith("#")
    }
    for alert, policy in load_monitoring().alerts.items():
        assert policy.runbook in headings, f"{alert}: no section #{policy.runbook} in {DOCS.name}"


@pytest.mark.parametrize("spec", load_dashboard_specs(), ids=lambda s: s.uid)
def test_dashboard_panels_do_not_overlap_and_have_unique_ids(spec):
    panels = dashboard_json(spec, load_metrics())["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells = set()
    for panel in panels:
        grid = panel["gridPos"]
        area = {
            (x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert grid["x"] + grid["w"] <= 24 and not area & cells, f"{panel['title']} overlaps"
        cells |= area
