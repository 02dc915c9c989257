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
    """Install kube-prometheus-stack (chart pinned in catalog/monitoring.yaml); false: use an existing Prometheus named
    by `releaseLabel` and `url`."""
    releaseLabel: Optional[DnsLabel] = None
    """With `install: false`: the `release` label the existing Prometheus selects ServiceMonitors, PodMonitors and
    PrometheusRules by."""
    url: Optional[HttpUrl] = None
    """With `install: false`: the existing Prometheus's HTTP URL, which the Dynamo planner queries."""
    values: FreeFormValues = pydantic.Field(default_factory=dict)
    """Helm values merged over the stack's for kube-prometheus-stack (its chart's values.yaml); credentials refused."""

    @pydantic.model_validator(mode="after")
    def _existing_is_named(self) -> PrometheusConfig:
        if not self.install and (self.releaseLabel is None or self.url is None):
            raise ValueError("with install: false, releaseLabel and url name the existing Prometheus")
        if self.install and (self.releaseLabel or self.url):
            raise ValueError("releaseLabel and url name an existing Prometheus: only with install: false")
        return self


class MonitoringConfig(Block):
    enabled: bool = True
    """Deploy the monitoring objects: Prometheus (or the rules for an existing one), dashboards, SLO alerts."""
    namespace: DnsLabel = "monitoring"
    """The namespace of Prometheus, the DCGM exporter and the rules (a DNS label)."""
    createNamespace: Optional[bool] = None
    """Create `namespace`; unset: create it when the stack installs Prometheus."""
    prometheus: PrometheusConfig = PrometheusConfig()
    """The Prometheus to install or to use."""
    dcgmExporter: bool = True
    """Install NVIDIA's DCGM exporter (GPU metrics) and its ServiceMonitor."""
    runbookBaseUrl: Optional[HttpUrl] = None
    """The base of the alerts' `runbook_url` annotation (`<base>#<alert runbook>`); unset: catalog/monitoring.yaml's
    `runbookBaseUrl`."""
    slo: FreeFormValues = pydantic.Field(default_factory=dict)
    """Overrides of catalog/monitoring.yaml's `sloDefaults` (keys: ttftP99Seconds, maxKvCacheUsage, queueGrowthRequests,
    queueGrowthWindow, maxErrorRatio, maxWorkerRestarts, workerRestartWindow, maxGpuMemoryRatio, kvFallbackTtftFactor);
    `{}`: the data's values."""

    @property
    def creates_namespace(self) -> bool:
        return self.prometheus.install if self.createNamespace is None else self.createNamespace
