"""Monitoring facts (`catalog/monitoring.yaml`): pinned charts, default SLOs, the policy of each alert."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Literal

import pydantic

from serving_stack.facts.data import DATA_DIR, Data, load_model

PROMETHEUS_DURATION = r"^[0-9]+[smhdwy]$"
Duration = Annotated[str, pydantic.StringConstraints(pattern=PROMETHEUS_DURATION)]
Fraction = Annotated[float, pydantic.Field(gt=0, lt=1)]


class HelmChartPin(Data):
    repository: str = pydantic.Field(pattern=r"^https://")
    chart: str
    version: str = pydantic.Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")
    releaseName: str = pydantic.Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=53)


class KubePrometheusStackPin(HelmChartPin):
    prometheusService: str
    prometheusPort: int = pydantic.Field(gt=0, lt=65536)


class DcgmExporterPin(HelmChartPin):
    metricsPortName: str


class Charts(Data):
    kubePrometheusStack: KubePrometheusStackPin
    dcgmExporter: DcgmExporterPin


class SloSettings(Data):
    """The stack's SLOs beyond the published criteria; the shape config `monitoring.slo` overrides."""

    ttftP99Seconds: float = pydantic.Field(gt=0)
    maxKvCacheUsage: Fraction
    queueGrowthRequests: float = pydantic.Field(gt=0)
    queueGrowthWindow: Duration
    maxErrorRatio: Fraction
    maxWorkerRestarts: int = pydantic.Field(ge=0)
    workerRestartWindow: Duration
    maxGpuMemoryRatio: Fraction
    kvFallbackTtftFactor: float = pydantic.Field(gt=1)


class AlertPolicy(Data):
    for_: Duration = pydantic.Field(alias="for")
    severity: Literal["critical", "warning", "info"]
    runbook: str = pydantic.Field(pattern=r"^[a-z0-9-]+$")


class MonitoringFacts(Data):
    schemaVersion: Literal[1]
    charts: Charts
    sloDefaults: SloSettings
    alerts: dict[str, AlertPolicy] = pydantic.Field(min_length=1)
    rateWindow: Duration
    runbookBaseUrl: str = pydantic.Field(min_length=1)


@functools.lru_cache(maxsize=4)
def load_monitoring(root: Path = DATA_DIR) -> MonitoringFacts:
    return load_model(root / "monitoring.yaml", MonitoringFacts, root)
