"""Config block `monitoring`: data defaults, partial SLO overrides, an existing Prometheus must be named."""

from __future__ import annotations

import pydantic
import pytest

from serving_stack.config.monitoring import MonitoringConfig
from serving_stack.errors import ConfigError
from serving_stack.facts.monitoring import load_monitoring
from serving_stack.plan.monitoring import monitoring_settings


def settings_of(raw):
    return monitoring_settings(MonitoringConfig.model_validate(raw), load_monitoring())


def test_defaults_install_everything_with_the_data_slos():
    settings = settings_of({})
    assert settings.install_prometheus and settings.install_dcgm_exporter and settings.create_namespace
    assert settings.slo == load_monitoring().sloDefaults
    assert settings.runbook_base_url == load_monitoring().runbookBaseUrl


def test_an_slo_override_keeps_the_other_defaults():
    settings = settings_of({"slo": {"maxKvCacheUsage": 0.85}})
    assert settings.slo.maxKvCacheUsage == 0.85
    assert settings.slo.ttftP99Seconds == load_monitoring().sloDefaults.ttftP99Seconds


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
    settings = settings_of(raw)
    assert not settings.install_prometheus and not settings.create_namespace
    assert settings.existing_prometheus() == ("prometheus", "http://prometheus.observability.svc:9090")
