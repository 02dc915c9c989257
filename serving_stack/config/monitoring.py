"""Config block `monitoring`. Defaults live in catalog/monitoring.yaml (SLOs, runbook URL) and here
(switches); `slo` keys not given keep their data default (checked against the data by the plan)."""

from __future__ import annotations

from typing import Optional

import pydantic

from serving_stack.config.types import Block, DnsLabel, FreeFormValues, HttpUrl


class PrometheusConfig(Block):
    """`install`: the stack's kube-prometheus-stack; otherwise the existing Prometheus whose selectors match
    `release: <releaseLabel>` and which the Dynamo planner reaches at `url`."""

    install: bool = True
    releaseLabel: Optional[DnsLabel] = None
    url: Optional[HttpUrl] = None
    values: FreeFormValues = pydantic.Field(default_factory=dict)

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
    runbookBaseUrl: Optional[HttpUrl] = None
    slo: FreeFormValues = pydantic.Field(default_factory=dict)
