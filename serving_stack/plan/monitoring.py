"""Monitoring settings + facts + the deployed targets -> everything the Monitoring component creates, and
the values the Dynamo platform release needs so that its PodMonitors exist and are selected."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import pydantic

import serving_stack.plan.monitoring_values as values
from serving_stack.config.monitoring import MonitoringConfig
from serving_stack.errors import from_validation_error
from serving_stack.facts.dashboards import DashboardSpec
from serving_stack.facts.metrics import MetricsCatalog
from serving_stack.facts.monitoring import DcgmExporterPin, KubePrometheusStackPin, MonitoringFacts, SloSettings
from serving_stack.plan.alerts import WatchedTarget, alert_thresholds, prometheus_rule, rule_groups
from serving_stack.plan.canary_alerts import CanaryAlerting
from serving_stack.plan.dashboards import dashboard_config_maps

RULE_NAME = "nemotron-serving"
DCGM_SERVICE_MONITOR = "dcgm-exporter"


@dataclass(frozen=True)
class MonitoringSettings:
    """The stack's monitoring choices (config `monitoring`). With `install_prometheus` false an existing
    Prometheus is used: `release_label` is the label its selectors match, `prometheus_url` its in-cluster URL."""

    namespace: str
    create_namespace: bool
    install_prometheus: bool
    install_dcgm_exporter: bool
    slo: SloSettings
    runbook_base_url: str
    release_label: Optional[str] = None
    prometheus_url: Optional[str] = None
    prometheus_values: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.install_prometheus:
            self.existing_prometheus()

    def existing_prometheus(self) -> tuple[str, str]:
        """(release label, URL) of the Prometheus the stack does not install."""
        if not self.release_label or not self.prometheus_url:
            raise ValueError("an existing Prometheus is named by its release label and its URL")
        return self.release_label, self.prometheus_url


@dataclass(frozen=True)
class MonitoringPlan:
    namespace: str
    create_namespace: bool
    release_label: str
    prometheus_url: str
    install_prometheus: bool
    prometheus_chart: KubePrometheusStackPin
    prometheus_values: Mapping[str, Any]
    install_dcgm_exporter: bool
    dcgm_exporter_chart: DcgmExporterPin
    dcgm_exporter_values: Mapping[str, Any]
    dcgm_service_monitor: Mapping[str, Any]
    prometheus_rule: Mapping[str, Any]
    dashboards: Mapping[str, Mapping[str, str]]

    @property
    def dynamo_platform_values(self) -> dict[str, Any]:
        """Merge into the dynamo-platform release values (and make that release depend on `Monitoring.crds_ready`)."""
        return values.dynamo_platform_metrics_values(self.prometheus_url, self.release_label)


def monitoring_settings(config: MonitoringConfig, facts: MonitoringFacts) -> MonitoringSettings:
    """The `monitoring` block with the data defaults applied; an unknown or bad `slo` key is a config error."""
    try:
        slo = SloSettings.model_validate({**facts.sloDefaults.model_dump(), **config.slo})
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, SloSettings, prefix="monitoring.slo.") from None
    create = config.prometheus.install if config.createNamespace is None else config.createNamespace
    return MonitoringSettings(
        namespace=config.namespace,
        create_namespace=create,
        install_prometheus=config.prometheus.install,
        install_dcgm_exporter=config.dcgmExporter,
        slo=slo,
        runbook_base_url=config.runbookBaseUrl or facts.runbookBaseUrl,
        release_label=config.prometheus.releaseLabel,
        prometheus_url=config.prometheus.url,
        prometheus_values=config.prometheus.values,
    )


def plan_monitoring(
    settings: MonitoringSettings,
    serving_namespace: str,
    targets: Sequence[WatchedTarget],
    criteria_max_ttft_p50_ms: float,
    criteria_min_tokens_per_second_per_user: float,
    gpu_node_label: str,
    gpu_taint: Mapping[str, str],
    facts: MonitoringFacts,
    metrics: MetricsCatalog,
    dashboards: Sequence[DashboardSpec],
    canary: Optional[CanaryAlerting],
) -> MonitoringPlan:
    """`canary`: the targets have canaries (config `operability.canary`), so the rules watch them too."""
    charts = facts.charts
    if settings.install_prometheus:
        release_label = charts.kubePrometheusStack.releaseName
        prometheus_url = values.prometheus_endpoint(charts.kubePrometheusStack, settings.namespace)
    else:
        release_label, prometheus_url = settings.existing_prometheus()
    thresholds = alert_thresholds(criteria_max_ttft_p50_ms, criteria_min_tokens_per_second_per_user, settings.slo)
    groups = rule_groups(serving_namespace, targets, thresholds, facts, metrics, settings.runbook_base_url, canary)
    return MonitoringPlan(
        namespace=settings.namespace,
        create_namespace=settings.create_namespace,
        release_label=release_label,
        prometheus_url=prometheus_url,
        install_prometheus=settings.install_prometheus,
        prometheus_chart=charts.kubePrometheusStack,
        prometheus_values=deep_merge(values.kube_prometheus_stack_values(), settings.prometheus_values),
        install_dcgm_exporter=settings.install_dcgm_exporter,
        dcgm_exporter_chart=charts.dcgmExporter,
        dcgm_exporter_values=values.dcgm_exporter_values(gpu_node_label, gpu_taint),
        dcgm_service_monitor=values.dcgm_service_monitor(
            DCGM_SERVICE_MONITOR, settings.namespace, release_label, charts.dcgmExporter
        ),
        prometheus_rule=prometheus_rule(RULE_NAME, settings.namespace, release_label, groups),
        dashboards=dashboard_config_maps(tuple(dashboards), metrics),
    )


def deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overlay.items():
        both_maps = isinstance(value, Mapping) and isinstance(merged.get(key), Mapping)
        merged[key] = deep_merge(merged[key], value) if both_maps else value
    return merged
