"""The Prometheus metric names the alert rules and dashboards use (`catalog/metrics.yaml`), loaded once.

Rules and dashboards refer to a metric by its role (`dynamoFrontend.timeToFirstToken`), never by its
exposed name, so an upstream rename is a one-line data change.

Grafana dashboard specs (`catalog/dashboards/*.yaml`): rows of panels whose queries name metrics by role.

Monitoring facts (`catalog/monitoring.yaml`): pinned charts, default SLOs, the policy of each alert.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Annotated, Literal, Optional

import pydantic

from serving_stack.facts.strict_files import DATA_DIR, Data, load_model

METRIC_NAME = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"
METRIC_REFERENCE = re.compile(r"@([A-Za-z]+)\.([A-Za-z]+)")


class Metric(Data):
    name: str = pydantic.Field(pattern=METRIC_NAME)
    type: Literal["counter", "gauge", "histogram"]
    unit: str
    labels: tuple[str, ...] = ()
    labelValues: dict[str, dict[str, tuple[str, ...]]] = pydantic.Field(default_factory=dict)
    source: Optional[str] = None
    notes: Optional[str] = None

    @pydantic.model_validator(mode="after")
    def _counters_end_in_total(self) -> Metric:
        if (self.type == "counter") != self.name.endswith("_total"):
            raise ValueError(f"{self.name}: counters (and only counters) are exposed with the _total suffix")
        return self

    def values(self, label: str, value_set: str) -> tuple[str, ...]:
        """A named set of values of one label (e.g. the `queued` values of `stage`)."""
        return self.labelValues[label][value_set]

    def regex(self, label: str, value_set: str) -> str:
        """The values as a PromQL regex alternation, for `label=~"..."`."""
        return "|".join(re.escape(v) for v in self.values(label, value_set))


class MetricGroup(Data):
    exposedBy: str
    source: str
    scrapePort: Optional[int] = pydantic.Field(default=None, gt=0, lt=65536)
    notes: Optional[str] = None
    metrics: dict[str, Metric] = pydantic.Field(min_length=1)


class MetricsCatalog(Data):
    schemaVersion: Literal[1]
    groups: dict[str, MetricGroup] = pydantic.Field(min_length=1)

    @pydantic.model_validator(mode="after")
    def _names_unique(self) -> MetricsCatalog:
        names = [m.name for g in self.groups.values() for m in g.metrics.values()]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"metric names listed twice: {duplicates}")
        return self

    def metric(self, group: str, key: str) -> Metric:
        try:
            return self.groups[group].metrics[key]
        except KeyError:
            raise KeyError(f"no metric {group}.{key} in catalog/metrics.yaml") from None

    def resolve(self, template: str) -> str:
        """Replace every `@group.key` in a PromQL template by that metric's exposed name."""
        return METRIC_REFERENCE.sub(lambda match: self.metric(match.group(1), match.group(2)).name, template)


@functools.lru_cache(maxsize=4)
def load_metrics(root: Path = DATA_DIR) -> MetricsCatalog:
    return load_model(root / "metrics.yaml", MetricsCatalog, root)


class Query(Data):
    expr: str
    legend: str


class Panel(Data):
    title: str
    unit: str
    queries: tuple[Query, ...] = pydantic.Field(min_length=1)


class Row(Data):
    title: str
    panels: tuple[Panel, ...] = pydantic.Field(min_length=1)


class Variable(Data):
    name: str = pydantic.Field(pattern=r"^[a-z_]+$")
    metric: str = pydantic.Field(pattern=r"^@[A-Za-z]+\.[A-Za-z]+$")
    label: str


class DashboardSpec(Data):
    uid: str = pydantic.Field(pattern=r"^[a-z0-9-]{1,40}$")
    title: str
    description: str
    tags: tuple[str, ...]
    variables: tuple[Variable, ...]
    rows: tuple[Row, ...] = pydantic.Field(min_length=1)


@functools.lru_cache(maxsize=4)
def load_dashboard_specs(root: Path = DATA_DIR) -> tuple[DashboardSpec, ...]:
    return tuple(load_model(path, DashboardSpec, root) for path in sorted((root / "dashboards").glob("*.yaml")))


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
    operatorVersion: str = pydantic.Field(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")


class OperatorCrdsPin(HelmChartPin):
    """The Prometheus Operator's CRDs alone; `operatorVersion`: the operator release they come from."""

    operatorVersion: str = pydantic.Field(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")


class DcgmExporterPin(HelmChartPin):
    metricsPortName: str


class Charts(Data):
    kubePrometheusStack: KubePrometheusStackPin
    prometheusOperatorCrds: OperatorCrdsPin
    dcgmExporter: DcgmExporterPin

    @pydantic.model_validator(mode="after")
    def _one_operator(self) -> Charts:
        if self.prometheusOperatorCrds.operatorVersion != self.kubePrometheusStack.operatorVersion:
            raise ValueError("prometheusOperatorCrds and kubePrometheusStack come from different operator versions")
        return self


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
