"""Config block `monitoring`: data defaults, partial SLO overrides, an existing Prometheus must be named."""

from __future__ import annotations

import pydantic
import pytest
from monitoring_helpers import catalog_targets

from serving_stack.config.monitoring import MonitoringConfig
from serving_stack.errors import ConfigError
from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.monitoring import load_metrics, load_monitoring
from serving_stack.plan.monitoring import plan_monitoring, slo_settings


def settings_of(raw):
    return slo_settings(MonitoringConfig.model_validate(raw), load_monitoring())


def plan_of(raw):
    criteria = load_catalog().criteria
    facts = load_monitoring()
    config, targets = MonitoringConfig.model_validate(raw), catalog_targets()[:1]
    return plan_monitoring(config, "serving", targets, criteria, 600, facts, load_metrics(), [], None)


def test_defaults_install_everything_with_the_data_slos():
    plan = plan_of({})
    assert plan.install_prometheus and plan.install_dcgm_exporter and plan.create_namespace
    assert settings_of({}) == load_monitoring().sloDefaults
    (group,) = plan.prometheus_rule["spec"]["groups"]
    assert {r["annotations"]["runbook_url"].split("#")[0] for r in group["rules"]} == {load_monitoring().runbookBaseUrl}


def test_an_slo_override_keeps_the_other_defaults():
    slo = settings_of({"slo": {"maxKvCacheUsage": 0.85}})
    assert slo.maxKvCacheUsage == 0.85
    assert slo.ttftP99Seconds == load_monitoring().sloDefaults.ttftP99Seconds


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"slo": {"maxKvCacheUsage": 1.5}}, "monitoring.slo.maxKvCacheUsage: Input should be less than 1"),
        ({"slo": {"maxKvCache": 0.8}}, "monitoring.slo.maxKvCache: unknown key"),
    ],
)
def test_bad_slo_names_the_key(raw, expected):
    with pytest.raises(ConfigError) as raised:
        settings_of(raw)
    assert str(raised.value).startswith(expected)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"prometheus": {"install": False}}, "releaseLabel and url"),
        ({"prometheus": {"releaseLabel": "prometheus"}}, "only with install: false"),
        ({"namespace": "Monitoring"}, "DNS label"),
    ],
)
def test_bad_monitoring_config_names_the_problem(raw, expected):
    with pytest.raises(pydantic.ValidationError, match=expected):
        MonitoringConfig.model_validate(raw)


def test_an_existing_prometheus_is_used_by_its_release_label_and_url():
    raw = {
        "createNamespace": False,
        "prometheus": {
            "install": False,
            "releaseLabel": "prometheus",
            "url": "http://prometheus.observability.svc:9090",
        },
    }
    plan = plan_of(raw)
    assert not plan.install_prometheus and not plan.create_namespace
    assert (plan.release_label, plan.prometheus_url) == ("prometheus", "http://prometheus.observability.svc:9090")
