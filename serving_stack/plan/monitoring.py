"""Monitoring settings + facts + the deployed targets -> the Monitoring component's Helm values, PrometheusRule,
monitors and Grafana dashboards, and the values the Dynamo platform needs so that its PodMonitors are selected.

- Alerts (docs/monitoring.md): the published criteria and the stack's SLOs per target, each selecting one target's
  pods by the operator's `<dgd>-<component in lower case>` Deployment names (operator graph.go
  GetDynamoComponentName). A KV fallback off EFA is alerted on its symptom (TTFT far above the published figure):
  no metric names the NIXL backend.
- The `release` label problem (ai-dynamo/dynamo#12003): the operator's PodMonitors carry no `release` label. The
  stack's own Prometheus selects everything; with an existing one, every object carries its release label.
- Dashboards come from `catalog/dashboards/*.yaml` with the metric names of `catalog/metrics.yaml`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import pydantic

from serving_stack.config.monitoring import MonitoringConfig
from serving_stack.errors import ConfigError, from_validation_error
from serving_stack.facts.monitoring import (
    DashboardSpec,
    DcgmExporterPin,
    KubePrometheusStackPin,
    MetricsCatalog,
    MonitoringFacts,
    OperatorCrdsPin,
    Panel,
    SloSettings,
    Variable,
)
from serving_stack.names import RELEASE_LABEL
from serving_stack.plan.operability import Alert, CanaryAlerting, canary_alerts

API_VERSION = "monitoring.coreos.com/v1"

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
VALUE = '{{ $value | printf "%.3g" }}'


@dataclass(frozen=True)
class WatchedTarget:
    """One deployed target as the rules see it. `kv_over_libfabric`: disaggregated, KV moved by NIXL LIBFABRIC (EFA)."""

    target_id: str
    dgd_name: str
    frontend_component: str
    worker_components: tuple[str, ...]
    kv_over_libfabric: bool
    published_ttft_p50_seconds: Optional[float]  # None: unpublished, so no alert is relative to it

    def __post_init__(self) -> None:
        for name in (self.dgd_name, self.frontend_component.lower(), *(w.lower() for w in self.worker_components)):
            if not DNS_LABEL.fullmatch(name):
                raise ValueError(f"{self.target_id}: {name!r} is not a DNS label, so pod names cannot be matched on it")
        if not self.worker_components:
            raise ValueError(f"{self.target_id}: a target has at least one worker component")


@dataclass(frozen=True)
class AlertThresholds:
    """The published criteria (catalog/targets.yaml) and the stack's SLOs."""

    ttft_p50_seconds: float
    min_tokens_per_second_per_user: float
    slo: SloSettings


def alert_thresholds(
    max_ttft_p50_ms: float, min_tokens_per_second_per_user: float, slo: SloSettings
) -> AlertThresholds:
    return AlertThresholds(max_ttft_p50_ms / 1000, min_tokens_per_second_per_user, slo)


def prometheus_rule(name: str, namespace: str, release_label: str, groups: list[dict[str, Any]]) -> dict[str, Any]:
    """The manifest; the `release` label is what a kube-prometheus-stack Prometheus selects rules by."""
    return {
        "apiVersion": API_VERSION,
        "kind": "PrometheusRule",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {RELEASE_LABEL: release_label, "app.kubernetes.io/part-of": "nemotron-lightning"},
        },
        "spec": {"groups": groups},
    }


def rule_groups(
    serving_namespace: str,
    targets: Sequence[WatchedTarget],
    thresholds: AlertThresholds,
    facts: MonitoringFacts,
    metrics: MetricsCatalog,
    runbook_base_url: str,
    canary: Optional[CanaryAlerting],
) -> list[dict[str, Any]]:
    """One group per target (`nemotron-<dgd>`) and, when the targets have canaries, `nemotron-canary`."""
    builder = _RuleBuilder(serving_namespace, thresholds, facts, metrics, runbook_base_url)
    groups = [builder.target_group(target) for target in targets]
    if canary is not None and targets:
        rules = [
            builder.rule(alert, {"target": target.target_id})
            for target in targets
            for alert in canary_alerts(serving_namespace, target.target_id, target.dgd_name, canary, metrics)
        ]
        groups.append({"name": "nemotron-canary", "rules": rules})
    return groups


class _RuleBuilder:
    def __init__(
        self,
        namespace: str,
        thresholds: AlertThresholds,
        facts: MonitoringFacts,
        metrics: MetricsCatalog,
        runbook_base_url: str,
    ) -> None:
        self.namespace = namespace
        self.t = thresholds
        self.facts = facts
        self.m = metrics
        self.window = facts.rateWindow
        self.runbook_base_url = runbook_base_url

    def rule(self, alert: Alert, labels: dict[str, str]) -> dict[str, Any]:
        policy = self.facts.alerts[alert.name]
        return {
            "alert": alert.name,
            "expr": alert.expr,
            "for": policy.for_,
            "labels": {"severity": policy.severity, **labels},
            "annotations": {
                "summary": alert.summary,
                "description": alert.description,
                "runbook_url": f"{self.runbook_base_url}#{policy.runbook}",
            },
        }

    def target_group(self, target: WatchedTarget) -> dict[str, Any]:
        frontend = f'namespace="{self.namespace}", pod=~"{_pods(target.dgd_name, [target.frontend_component])}"'
        workers = f'namespace="{self.namespace}", pod=~"{_pods(target.dgd_name, target.worker_components)}"'
        alerts = [
            self.ttft(
                target,
                frontend,
                0.5,
                self.t.ttft_p50_seconds,
                "NemotronTtftP50AboveCriteria",
                "the published criterion",
            ),
            self.ttft(target, frontend, 0.99, self.t.slo.ttftP99Seconds, "NemotronTtftP99AboveSlo", "the stack SLO"),
            self.tokens_per_user(target, frontend),
            self.kv_cache(target, workers),
            self.queue_growth(target, frontend),
            self.error_ratio(target, frontend),
            self.worker_restarts(target, workers),
            self.gpu_memory(target, workers),
        ]
        if target.kv_over_libfabric and target.published_ttft_p50_seconds is not None:
            alerts.append(self.kv_fabric_symptom(target, frontend, target.published_ttft_p50_seconds))
        return {
            "name": f"nemotron-{target.dgd_name}",
            "rules": [self.rule(a, {"target": target.target_id}) for a in alerts],
        }

    def _quantile(self, quantile: float, selector: str) -> str:
        ttft = self.m.metric("dynamoFrontend", "timeToFirstToken").name
        return (
            f"histogram_quantile({quantile}, sum by (namespace, le) (rate({ttft}_bucket{{{selector}}}[{self.window}])))"
        )

    def ttft(self, target: WatchedTarget, frontend: str, quantile: float, limit: float, name: str, what: str) -> Alert:
        percentile = f"p{round(quantile * 100)}"
        return Alert(
            name,
            f"{self._quantile(quantile, frontend)} > {limit:g}",
            f"{target.target_id}: TTFT {percentile} above {what} ({limit:g} s)",
            f"TTFT {percentile} over {self.window} is {VALUE} s, above {what} of {limit:g} s.",
        )

    def tokens_per_user(self, target: WatchedTarget, frontend: str) -> Alert:
        itl = self.m.metric("dynamoFrontend", "interTokenLatency").name
        limit = self.t.min_tokens_per_second_per_user
        tokens_per_second = (
            f"sum by (namespace) (rate({itl}_count{{{frontend}}}[{self.window}]))"
            f" / sum by (namespace) (rate({itl}_sum{{{frontend}}}[{self.window}]))"
        )
        return Alert(
            "NemotronTokensPerUserBelowCriteria",
            f"{tokens_per_second} < {limit:g}",
            f"{target.target_id}: tokens/s per user below the published criterion ({limit:g})",
            f"Tokens/s per user (1 / mean inter-token latency) over {self.window} is {VALUE}, below {limit:g}.",
        )

    def kv_cache(self, target: WatchedTarget, workers: str) -> Alert:
        usage = self.m.metric("dynamoWorker", "kvCacheUsage").name
        limit = self.t.slo.maxKvCacheUsage
        return Alert(
            "NemotronKvCacheNearlyFull",
            f"max by (namespace, pod) ({usage}{{{workers}}}) > {limit:g}",
            f"{target.target_id}: KV cache of {{{{ $labels.pod }}}} above {limit:.0%}",
            f"KV cache usage of {{{{ $labels.pod }}}} is {VALUE} (a 0..1 fraction), above {limit:g}: new requests queue or preempt.",
        )

    def queue_growth(self, target: WatchedTarget, frontend: str) -> Alert:
        stage = self.m.metric("dynamoFrontend", "stageRequests")
        queued = f'{stage.name}{{{frontend}, stage=~"{stage.regex("stage", "queued")}"}}'
        window, limit = self.t.slo.queueGrowthWindow, self.t.slo.queueGrowthRequests
        return Alert(
            "NemotronQueueGrowing",
            f"sum by (namespace) ({queued}) - sum by (namespace) ({queued} offset {window}) > {limit:g}",
            f"{target.target_id}: frontend queue grew by more than {limit:g} requests in {window}",
            f"The frontend queue ({', '.join(stage.values('stage', 'queued'))}) grew by {VALUE} requests over {window}.",
        )

    def error_ratio(self, target: WatchedTarget, frontend: str) -> Alert:
        requests = self.m.metric("dynamoFrontend", "requests")
        status = requests.values("status", "error")[0]
        errors = f'{frontend}, status="{status}", error_type!~"{requests.regex("error_type", "client")}"'
        limit = self.t.slo.maxErrorRatio
        return Alert(
            "NemotronErrorRatioHigh",
            f"sum by (namespace) (rate({requests.name}{{{errors}}}[{self.window}]))"
            f" / sum by (namespace) (rate({requests.name}{{{frontend}}}[{self.window}])) > {limit:g}",
            f"{target.target_id}: more than {limit:.0%} of requests fail",
            f"{VALUE} of requests over {self.window} failed server-side (client errors excluded), above {limit:g}.",
        )

    def worker_restarts(self, target: WatchedTarget, workers: str) -> Alert:
        restarts = f"{self.m.metric('kubeStateMetrics', 'containerRestarts').name}{{{workers}}}"
        window, limit = self.t.slo.workerRestartWindow, self.t.slo.maxWorkerRestarts
        # max - min over the window counts restarts exactly; increase() would extrapolate N restarts past N.
        return Alert(
            "NemotronWorkerRestarting",
            f"max_over_time({restarts}[{window}]) - min_over_time({restarts}[{window}]) > {limit:g}",
            f"{target.target_id}: worker {{{{ $labels.pod }}}} restarted",
            f"Container {{{{ $labels.container }}}} of {{{{ $labels.pod }}}} restarted {VALUE} times in {window} (allowed: {limit:g}).",
        )

    def gpu_memory(self, target: WatchedTarget, workers: str) -> Alert:
        used, free, reserved = (
            f"{self.m.metric('dcgm', key).name}{{{workers}}}"
            for key in ("framebufferUsed", "framebufferFree", "framebufferReserved")
        )
        limit = self.t.slo.maxGpuMemoryRatio
        return Alert(
            "NemotronGpuMemoryHigh",
            f"{used} / ({used} + {free} + {reserved}) > {limit:g}",
            f"{target.target_id}: GPU {{{{ $labels.gpu }}}} of {{{{ $labels.pod }}}} above {limit:.0%} memory",
            f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.Hostname }}}} uses {VALUE} of its memory, above {limit:g}: "
            "more than the engine preallocates, an out-of-memory is near.",
        )

    def kv_fabric_symptom(self, target: WatchedTarget, frontend: str, published_ttft_p50_seconds: float) -> Alert:
        limit = round(self.t.slo.kvFallbackTtftFactor * published_ttft_p50_seconds, 4)
        return Alert(
            "NemotronKvTransferSlowerThanFabric",
            f"{self._quantile(0.5, frontend)} > {limit:g}",
            f"{target.target_id}: TTFT p50 {self.t.slo.kvFallbackTtftFactor:g}x the published figure, KV transfer may have left EFA",
            f"TTFT p50 is {VALUE} s, above {limit:g} s ({self.t.slo.kvFallbackTtftFactor:g}x the published "
            f"{published_ttft_p50_seconds} s). A symptom, not proof: check the worker logs for "
            "'Backend LIBFABRIC was instantiated' versus 'Backend UCX was instantiated'.",
        )


def _pods(dgd_name: str, components: Sequence[str]) -> str:
    names = sorted(c.lower() for c in components)
    alternation = names[0] if len(names) == 1 else f"({'|'.join(names)})"
    return f"{dgd_name}-{alternation}-.*"


SELECT_EVERYTHING = {
    "podMonitorSelectorNilUsesHelmValues": False,
    "podMonitorNamespaceSelector": {},
    "serviceMonitorSelectorNilUsesHelmValues": False,
    "serviceMonitorNamespaceSelector": {},
    "ruleSelectorNilUsesHelmValues": False,
    "ruleNamespaceSelector": {},
}


# Every PodMonitor, ServiceMonitor and PrometheusRule of the cluster. The control plane (EKS runs it) and
# kube-proxy (bound to 127.0.0.1) are not scrapeable. The CRDs come from their own release, which Helm keeps on
# uninstall (`helm.sh/resource-policy: keep`, as kube-prometheus-stack's crds/): deleting a CRD deletes its objects.
KUBE_PROMETHEUS_STACK_VALUES = {
    "crds": {"enabled": False},
    "prometheus": {"prometheusSpec": SELECT_EVERYTHING},
    **{key: {"enabled": False} for key in ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy")},
}
OPERATOR_CRDS_VALUES = {"crds": {"annotations": {"helm.sh/resource-policy": "keep"}}}


def dcgm_exporter_values(gpu_node_label: str, gpu_taint: Mapping[str, str]) -> dict[str, Any]:
    """On GPU nodes only (nodes carrying `gpu_node_label`), tolerating their taint; the chart's own
    ServiceMonitor is off because the stack creates one (`dcgm_service_monitor`) it can label and validate."""
    return {
        "tolerations": [{"key": gpu_taint["key"], "operator": "Exists", "effect": gpu_taint["effect"]}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": gpu_node_label, "operator": "Exists"}]}]
                }
            }
        },
        "serviceMonitor": {"enabled": False},
    }


def dcgm_service_monitor(name: str, namespace: str, release_label: str, pin: DcgmExporterPin) -> dict[str, Any]:
    """Selects the chart's Service by its selector labels. `honorLabels` keeps the exporter's pod/namespace/
    container labels (the pod that holds the GPU) instead of renaming them `exported_*`."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "namespace": namespace, "labels": {RELEASE_LABEL: release_label}},
        "spec": {
            "selector": {
                "matchLabels": {
                    "app.kubernetes.io/name": pin.chart,
                    "app.kubernetes.io/instance": pin.releaseName,
                }
            },
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [{"port": pin.metricsPortName, "path": "/metrics", "interval": "15s", "honorLabels": True}],
        },
    }


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
    crds_chart: OperatorCrdsPin
    crds_values: Mapping[str, Any]
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
        """Merge into the dynamo-platform values (that release depends on `Monitoring.crds_ready`): PodMonitors on
        explicitly (auto-detection needs the CRD at install time), labelled for a release-selecting Prometheus."""
        labels = {RELEASE_LABEL: self.release_label}
        metrics = {"prometheusEndpoint": self.prometheus_url, "podMonitors": {"enabled": True, "labels": labels}}
        return {"dynamo-operator": {"dynamo": {"metrics": metrics}}}


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


def check_slo_units(slo: SloSettings, criteria_max_ttft_p50_ms: float, request_timeout_seconds: float) -> None:
    """`ttftP99Seconds` between the published TTFT p50 criterion (a p99 bound below it fires on a stack that
    meets its criteria) and the longest an answer may take (`gateway.router.timeoutSeconds`: a later first
    token is never seen): outside, it is most likely written in milliseconds, or in minutes."""
    low, value = criteria_max_ttft_p50_ms / 1000, slo.ttftP99Seconds
    if not low <= value <= request_timeout_seconds:
        raise ConfigError(
            "monitoring.slo.ttftP99Seconds",
            f"{value:g} s is {'below the published TTFT p50 criterion' if value < low else 'above gateway.router.timeoutSeconds'}"
            " (seconds, not milliseconds)",
            f"{low:g}..{request_timeout_seconds:g} seconds",
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
        pin = charts.kubePrometheusStack
        prometheus_url = f"http://{pin.prometheusService}.{settings.namespace}.svc.cluster.local:{pin.prometheusPort}"
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
        crds_chart=charts.prometheusOperatorCrds,
        crds_values=copy.deepcopy(OPERATOR_CRDS_VALUES),
        prometheus_chart=charts.kubePrometheusStack,
        prometheus_values=deep_merge(copy.deepcopy(KUBE_PROMETHEUS_STACK_VALUES), settings.prometheus_values),
        install_dcgm_exporter=settings.install_dcgm_exporter,
        dcgm_exporter_chart=charts.dcgmExporter,
        dcgm_exporter_values=dcgm_exporter_values(gpu_node_label, gpu_taint),
        dcgm_service_monitor=dcgm_service_monitor(
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
