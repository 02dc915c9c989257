"""Rendered monitoring objects validate: the PrometheusRule and ServiceMonitor against the vendored
monitoring.coreos.com CRDs (strict), the dashboard ConfigMaps with kubernetes-validate strict, and every
Helm value the stack sets is a key of the pinned chart's defaults (vendored), so a typo cannot hide."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import crd_schemas
import kubernetes_validate
import pytest
import yaml
from monitoring_helpers import monitoring_plan, run_monitoring

from serving_stack.facts.monitoring import load_monitoring
from tools.mock_runtime import plain_numbers
from tools.render import kubernetes_objects

KUBERNETES_VERSION = "1.33.0"
HELM_VALUES = Path(__file__).resolve().parent.parent / "schemas" / "helm-values"


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return [plain_numbers(o) for o in kubernetes_objects(run_monitoring(monitoring_plan()).resources)]


def test_monitoring_objects_validate_against_the_vendored_crds(rendered):
    monitoring = [o for o in rendered if o["apiVersion"].startswith("monitoring.coreos.com/")]
    assert {o["kind"] for o in monitoring} == {"PrometheusRule", "ServiceMonitor"}
    for obj in monitoring:
        assert crd_schemas.errors(obj) == [], obj["kind"]


@pytest.mark.parametrize(
    ("kind", "spec", "bad"),
    [
        (
            "PrometheusRule",
            {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "up == 0", "for": "5m"}]}]},
            "fro",
        ),
        ("ServiceMonitor", {"selector": {}, "endpoints": [{"port": "metrics", "honorLabels": True}]}, "honourLabels"),
        (
            "PodMonitor",
            {"selector": {}, "podMetricsEndpoints": [{"portNumber": 9090, "path": "/metrics"}]},
            "portNumbr",
        ),
    ],
)
def test_crd_validation_accepts_a_good_object_and_rejects_an_unknown_field(kind, spec, bad):
    good = {"apiVersion": "monitoring.coreos.com/v1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}
    assert crd_schemas.errors(good) == []
    entries = spec.get("groups", [{}])[0].get("rules") or spec.get("endpoints") or spec["podMetricsEndpoints"]
    entries[0][bad] = entries[0].pop(next(iter(entries[0])))
    assert any(bad in e for e in crd_schemas.errors(good))


def test_dashboard_config_maps_validate_strictly(rendered):
    config_maps = [o for o in rendered if o["kind"] == "ConfigMap"]
    assert config_maps
    for obj in [*config_maps, *(o for o in rendered if o["kind"] == "Namespace")]:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def leaf_paths(values: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in values.items():
        if isinstance(value, dict) and value:
            yield from leaf_paths(value, (*prefix, key))
        else:
            yield (*prefix, key)


def missing_keys(defaults: dict[str, Any], values: dict[str, Any]) -> list[str]:
    missing = []
    for path in leaf_paths(values):
        node: Any = defaults
        for key in path:
            if node == {}:
                break  # a free-form map in the chart (affinity, selectors): any key is the chart's input
            if not isinstance(node, dict) or key not in node:
                missing.append(".".join(path))
                break
            node = node[key]
    return missing


def chart_defaults(chart: str) -> dict[str, Any]:
    pin = getattr(load_monitoring().charts, chart)
    return yaml.safe_load((HELM_VALUES / f"{pin.chart}-{pin.version}.values.yaml").read_text())


@pytest.mark.parametrize("chart", ["kubePrometheusStack", "dcgmExporter"])
def test_every_helm_value_the_stack_sets_is_a_key_of_the_chart_defaults(chart):
    plan = monitoring_plan()
    ours = plan.prometheus_values if chart == "kubePrometheusStack" else plan.dcgm_exporter_values
    assert missing_keys(chart_defaults(chart), dict(ours)) == []


def test_a_misspelt_helm_value_is_caught():
    typo = {"prometheus": {"prometheusSpec": {"podMonitorSelectorNilUsesHelmValue": False}}}
    assert missing_keys(chart_defaults("kubePrometheusStack"), typo) == [
        "prometheus.prometheusSpec.podMonitorSelectorNilUsesHelmValue"
    ]
