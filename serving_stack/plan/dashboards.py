"""Grafana dashboards generated from `catalog/dashboards/*.yaml` with the metric names of `catalog/metrics.yaml`.

Generated rather than vendored, so every query uses the same metric names as the alert rules (upstream
dashboards consulted are listed in catalog/dashboards/README.md). A dashboard becomes a ConfigMap labelled
`grafana_dashboard: "1"`, which the Grafana sidecar of kube-prometheus-stack loads from every namespace.
"""

from __future__ import annotations

import json
from typing import Any

from serving_stack.facts.dashboards import DashboardSpec, Panel, Variable
from serving_stack.facts.metrics import MetricsCatalog

DASHBOARD_LABEL = {"grafana_dashboard": "1"}
GRAFANA_SCHEMA_VERSION = 39
PANEL_HEIGHT, ROW_WIDTH, PANELS_PER_LINE = 8, 24, 3
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def dashboard_json(spec: DashboardSpec, metrics: MetricsCatalog) -> dict[str, Any]:
    """The Grafana dashboard model (schemaVersion 39) with `@group.key` resolved to metric names."""
    panels: list[dict[str, Any]] = []
    y = 0
    for row in spec.rows:
        panels.append(
            {
                "type": "row",
                "title": row.title,
                "collapsed": False,
                "id": len(panels) + 1,
                "gridPos": {"h": 1, "w": ROW_WIDTH, "x": 0, "y": y},
                "panels": [],
            }
        )
        y += 1
        width = ROW_WIDTH // min(PANELS_PER_LINE, len(row.panels))
        for index, panel in enumerate(row.panels):
            x = (index % PANELS_PER_LINE) * width
            if index and x == 0:
                y += PANEL_HEIGHT
            panels.append(_timeseries(panel, len(panels) + 1, {"h": PANEL_HEIGHT, "w": width, "x": x, "y": y}, metrics))
        y += PANEL_HEIGHT
    return {
        "uid": spec.uid,
        "title": spec.title,
        "description": spec.description,
        "tags": list(spec.tags),
        "schemaVersion": GRAFANA_SCHEMA_VERSION,
        "editable": False,
        "graphTooltip": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [_datasource_variable(), *(_query_variable(v, metrics) for v in spec.variables)]},
        "panels": panels,
    }


def dashboard_config_maps(specs: tuple[DashboardSpec, ...], metrics: MetricsCatalog) -> dict[str, dict[str, str]]:
    """ConfigMap name -> data (`<uid>.json`), one per dashboard."""
    return {
        spec.uid: {f"{spec.uid}.json": json.dumps(dashboard_json(spec, metrics), indent=1, sort_keys=True)}
        for spec in specs
    }


def _timeseries(panel: Panel, panel_id: int, grid: dict[str, int], metrics: MetricsCatalog) -> dict[str, Any]:
    return {
        "type": "timeseries",
        "id": panel_id,
        "title": panel.title,
        "datasource": DATASOURCE,
        "gridPos": grid,
        "fieldConfig": {
            "defaults": {"unit": panel.unit, "custom": {"lineWidth": 1, "fillOpacity": 10, "showPoints": "never"}},
            "overrides": [],
        },
        "options": {
            "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "datasource": DATASOURCE,
                "expr": metrics.resolve(q.expr),
                "legendFormat": q.legend,
            }
            for i, q in enumerate(panel.queries)
        ],
    }


def _datasource_variable() -> dict[str, Any]:
    return {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus", "hide": 0}


def _query_variable(variable: Variable, metrics: MetricsCatalog) -> dict[str, Any]:
    query = f"label_values({metrics.resolve(variable.metric)}, {variable.label})"
    return {
        "name": variable.name,
        "type": "query",
        "datasource": DATASOURCE,
        "refresh": 2,
        "hide": 0,
        "query": {"query": query, "refId": "variable"},
        "definition": query,
        "includeAll": False,
        "multi": False,
    }
