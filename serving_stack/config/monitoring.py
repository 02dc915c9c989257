"""Config block `monitoring` (a proposal for the stack config: the lead mounts it on `StackConfig`).

Defaults live in catalog/monitoring.yaml (SLOs, runbook URL) and here (switches); `slo` keys not given
keep their data default.
"""
from __future__ import annotations

from typing import Any, Optional

import pydantic

from nemotron.config.serving import Block, DnsLabel
from serving_stack.facts.monitoring import SloSettings, load_monitoring
from serving_stack.plan.monitoring import MonitoringSettings


class PrometheusConfig(Block):
    """`install`: the stack's kube-prometheus-stack; otherwise the existing Prometheus whose selectors match
    `release: <releaseLabel>` and which the Dynamo planner reaches at `url`."""

    install: bool = True
    releaseLabel: Optional[DnsLabel] = None
    url: Optional[str] = pydantic.Field(default=None, pattern=r"^https?://")
    values: dict[str, Any] = pydantic.Field(default_factory=dict)

    @pydantic.model_validator(mode="after")
    def _existing_is_named(self) -> PrometheusConfig:
        if not self.install and (self.releaseLabel is None or self.url is None):
            raise ValueError("with install: false, releaseLabel and url name the existing Prometheus")
        if self.install and (self.releaseLabel or self.url):
            raise ValueError("releaseLabel and url name an existing Prometheus: only with install: false")
        return self


class MonitoringConfig(Block):
    enabled: bool = True
    namespace: DnsLabel = "monitoring"
    createNamespace: Optional[bool] = None
    prometheus: PrometheusConfig = PrometheusConfig()
    dcgmExporter: bool = True
    runbookBaseUrl: Optional[str] = pydantic.Field(default=None, min_length=1)
    slo: dict[str, Any] = pydantic.Field(default_factory=dict)

    @pydantic.field_validator("slo")
    @classmethod
    def _known_slo_keys(cls, slo: dict[str, Any]) -> dict[str, Any]:
        SloSettings.model_validate({**load_monitoring().sloDefaults.model_dump(), **slo})
        return slo

    def settings(self) -> MonitoringSettings:
        facts = load_monitoring()
        create = self.prometheus.install if self.createNamespace is None else self.createNamespace
        return MonitoringSettings(
            namespace=self.namespace,
            create_namespace=create,
            install_prometheus=self.prometheus.install,
            install_dcgm_exporter=self.dcgmExporter,
            slo=SloSettings.model_validate({**facts.sloDefaults.model_dump(), **self.slo}),
            runbook_base_url=self.runbookBaseUrl or facts.runbookBaseUrl,
            release_label=self.prometheus.releaseLabel,
            prometheus_url=self.prometheus.url,
            prometheus_values=self.prometheus.values,
        )
