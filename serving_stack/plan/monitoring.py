"""The `monitoring` block + facts + the deployed targets -> the Monitoring component's Helm values, PrometheusRule,
monitors and Grafana dashboards, and the values the Dynamo platform needs so that its PodMonitors are selected.

- Alerts (docs/monitoring.md): the published criteria and the stack's SLOs per target, each selecting one target's
  pods by the operator's `<dgd>-<component in lower case>` Deployment names (operator graph.go
  GetDynamoComponentName). A KV fallback off EFA is alerted on its symptom (TTFT far above the published figure):
  no metric names the NIXL backend.
- The `release` label problem (ai-dynamo/dynamo#12003): the operator's PodMonitors carry no `release` label. The
  stack's own Prometheus selects everything; with an existing one, every object carries its release label.
- Dashboards come from `catalog/dashboards/*.yaml` with the metric names of `catalog/metrics.yaml`.
- A target is watched as its rendered DGD runs (`watched_target`), not as the catalog lists it: only a
  disaggregated vLLM worker whose `--kv-transfer-config` names the NIXL LIBFABRIC backend (the EFA fabric
  profile sets it) can fall back from LIBFABRIC.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import pydantic

from serving_stack.config.monitoring import MonitoringConfig
from serving_stack.config.operability import CanaryConfig
from serving_stack.config.types import DNS_LABEL
from serving_stack.errors import ConfigError, from_validation_error
from serving_stack.facts.catalog import Criteria
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
from serving_stack.names import GPU_LABEL, GPU_TAINT, RELEASE_LABEL, WORKER_COMPONENT_TYPES
from serving_stack.plan.operability import Alert, canary_alerts
from serving_stack.plan.serving import KV_TRANSFER_FLAG, flag_values

API_VERSION = "monitoring.coreos.com/v1"

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
            if not re.fullmatch(DNS_LABEL, name):
                raise ValueError(f"{self.target_id}: {name!r} is not a DNS label, so pod names cannot be matched on it")
        if not self.worker_components:
            raise ValueError(f"{self.target_id}: a target has at least one worker component")


def watched_target(target_id: str, dgd: dict[str, Any], published_ttft_p50_ms: Optional[float]) -> WatchedTarget:
    components = dgd["spec"]["components"]
    (frontend,) = [c["name"] for c in components if c["type"] == "frontend"]
    workers = [c for c in components if c["type"] in WORKER_COMPONENT_TYPES]
    disaggregated = any(c["type"] in ("prefill", "decode") for c in workers)
    return WatchedTarget(
        target_id=target_id,
        dgd_name=dgd["metadata"]["name"],
        frontend_component=frontend,
        worker_components=tuple(c["name"] for c in workers),
        kv_over_libfabric=disaggregated and all("LIBFABRIC" in _nixl_backends(c) for c in workers),
        published_ttft_p50_seconds=None if published_ttft_p50_ms is None else published_ttft_p50_ms / 1000,
    )


def _nixl_backends(component: dict[str, Any]) -> set[str]:
    return {
        backend
        for container in component["podTemplate"]["spec"].get("containers", [])
        for config in flag_values(container.get("args", [])).get(KV_TRANSFER_FLAG, [])
        for backend in json.loads(config or "{}").get("kv_connector_extra_config", {}).get("backends", [])
    }


@dataclass(frozen=True)
class AlertThresholds:
    """The published criteria (catalog/targets.yaml) and the stack's SLOs."""

    ttft_p50_seconds: float
    min_tokens_per_second_per_user: float
    slo: SloSettings


def rule_groups(
    serving_namespace: str,
    targets: Sequence[WatchedTarget],
    thresholds: AlertThresholds,
    facts: MonitoringFacts,
    metrics: MetricsCatalog,
    runbook_base_url: str,
    canary: Optional[CanaryConfig],
) -> list[dict[str, Any]]:
    """One group per target (`nemotron-<dgd>`) and, when the targets have canaries, `nemotron-canary`."""

    def rules(target: WatchedTarget, alerts: list[Alert]) -> list[dict[str, Any]]:
        return [
            {
                "alert": alert.name,
                "expr": alert.expr,
                "for": (policy := facts.alerts[alert.name]).for_,
                "labels": {"severity": policy.severity, "target": target.target_id},
                "annotations": {
                    "summary": alert.summary,
                    "description": alert.description,
                    "runbook_url": f"{runbook_base_url}#{policy.runbook}",
                },
            }
            for alert in alerts
        ]

    groups = [
        {
            "name": f"nemotron-{t.dgd_name}",
            "rules": rules(t, _target_alerts(t, serving_namespace, thresholds, facts.rateWindow, metrics)),
        }
        for t in targets
    ]
    if canary is not None and targets:
        canary_rules = [
            rule
            for t in targets
            for rule in rules(t, canary_alerts(serving_namespace, t.target_id, t.dgd_name, canary, metrics))
        ]
        groups.append({"name": "nemotron-canary", "rules": canary_rules})
    return groups


def _target_alerts(
    target: WatchedTarget, namespace: str, t: AlertThresholds, window: str, m: MetricsCatalog
) -> list[Alert]:
    frontend = f'namespace="{namespace}", pod=~"{_pods(target.dgd_name, [target.frontend_component])}"'
    workers = f'namespace="{namespace}", pod=~"{_pods(target.dgd_name, target.worker_components)}"'
    tid, slo, ttft = target.target_id, t.slo, m.metric("dynamoFrontend", "timeToFirstToken").name

    def quantile(q: float) -> str:
        return f"histogram_quantile({q}, sum by (namespace, le) (rate({ttft}_bucket{{{frontend}}}[{window}])))"

    def ttft_above(q: float, limit: float, name: str, what: str) -> Alert:
        p = f"p{round(q * 100)}"
        summary = f"{tid}: TTFT {p} above {what} ({limit:g} s)"
        return Alert(
            name,
            f"{quantile(q)} > {limit:g}",
            summary,
            f"TTFT {p} over {window} is {VALUE} s, above {what} of {limit:g} s.",
        )

    itl = m.metric("dynamoFrontend", "interTokenLatency").name
    tokens_per_second = (
        f"sum by (namespace) (rate({itl}_count{{{frontend}}}[{window}]))"
        f" / sum by (namespace) (rate({itl}_sum{{{frontend}}}[{window}]))"
    )
    min_tokens, kv_usage = t.min_tokens_per_second_per_user, m.metric("dynamoWorker", "kvCacheUsage").name
    stage, requests = m.metric("dynamoFrontend", "stageRequests"), m.metric("dynamoFrontend", "requests")
    queued = f'{stage.name}{{{frontend}, stage=~"{stage.regex("stage", "queued")}"}}'
    server_errors = (
        f'status="{requests.values("status", "error")[0]}", error_type!~"{requests.regex("error_type", "client")}"'
    )
    restarts = f"{m.metric('kubeStateMetrics', 'containerRestarts').name}{{{workers}}}"
    used, free, reserved = (
        f"{m.metric('dcgm', key).name}{{{workers}}}"
        for key in ("framebufferUsed", "framebufferFree", "framebufferReserved")
    )
    restart_window, queue_window = slo.workerRestartWindow, slo.queueGrowthWindow
    alerts = [
        ttft_above(0.5, t.ttft_p50_seconds, "NemotronTtftP50AboveCriteria", "the published criterion"),
        ttft_above(0.99, slo.ttftP99Seconds, "NemotronTtftP99AboveSlo", "the stack SLO"),
        Alert(
            "NemotronTokensPerUserBelowCriteria",
            f"{tokens_per_second} < {min_tokens:g}",
            f"{tid}: tokens/s per user below the published criterion ({min_tokens:g})",
            f"Tokens/s per user (1 / mean inter-token latency) over {window} is {VALUE}, below {min_tokens:g}.",
        ),
        Alert(
            "NemotronKvCacheNearlyFull",
            f"max by (namespace, pod) ({kv_usage}{{{workers}}}) > {slo.maxKvCacheUsage:g}",
            f"{tid}: KV cache of {{{{ $labels.pod }}}} above {slo.maxKvCacheUsage:.0%}",
            f"KV cache usage of {{{{ $labels.pod }}}} is {VALUE} (a 0..1 fraction), above {slo.maxKvCacheUsage:g}: "
            "new requests queue or preempt.",
        ),
        Alert(
            "NemotronQueueGrowing",
            f"sum by (namespace) ({queued}) - sum by (namespace) ({queued} offset {queue_window})"
            f" > {slo.queueGrowthRequests:g}",
            f"{tid}: frontend queue grew by more than {slo.queueGrowthRequests:g} requests in {queue_window}",
            f"The frontend queue ({', '.join(stage.values('stage', 'queued'))}) grew by {VALUE} requests over "
            f"{queue_window}.",
        ),
        Alert(
            "NemotronErrorRatioHigh",
            f"sum by (namespace) (rate({requests.name}{{{frontend}, {server_errors}}}[{window}]))"
            f" / sum by (namespace) (rate({requests.name}{{{frontend}}}[{window}])) > {slo.maxErrorRatio:g}",
            f"{tid}: more than {slo.maxErrorRatio:.0%} of requests fail",
            f"{VALUE} of requests over {window} failed server-side (client errors excluded), above "
            f"{slo.maxErrorRatio:g}.",
        ),
        # max - min over the window counts restarts exactly; increase() would extrapolate N restarts past N.
        Alert(
            "NemotronWorkerRestarting",
            f"max_over_time({restarts}[{restart_window}]) - min_over_time({restarts}[{restart_window}])"
            f" > {slo.maxWorkerRestarts:g}",
            f"{tid}: worker {{{{ $labels.pod }}}} restarted",
            f"Container {{{{ $labels.container }}}} of {{{{ $labels.pod }}}} restarted {VALUE} times in "
            f"{restart_window} (allowed: {slo.maxWorkerRestarts:g}).",
        ),
        Alert(
            "NemotronGpuMemoryHigh",
            f"{used} / ({used} + {free} + {reserved}) > {slo.maxGpuMemoryRatio:g}",
            f"{tid}: GPU {{{{ $labels.gpu }}}} of {{{{ $labels.pod }}}} above {slo.maxGpuMemoryRatio:.0%} memory",
            f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.Hostname }}}} uses {VALUE} of its memory, above "
            f"{slo.maxGpuMemoryRatio:g}: more than the engine preallocates, an out-of-memory is near.",
        ),
    ]
    published, factor = target.published_ttft_p50_seconds, slo.kvFallbackTtftFactor
    if target.kv_over_libfabric and published is not None:
        limit = round(factor * published, 4)
        alerts.append(
            Alert(
                "NemotronKvTransferSlowerThanFabric",
                f"{quantile(0.5)} > {limit:g}",
                f"{tid}: TTFT p50 {factor:g}x the published figure, KV transfer may have left EFA",
                f"TTFT p50 is {VALUE} s, above {limit:g} s ({factor:g}x the published {published} s). A symptom, "
                "not proof: check the worker logs for 'Backend LIBFABRIC was instantiated' versus 'Backend UCX was "
                "instantiated'.",
            )
        )
    return alerts


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


def dcgm_service_monitor(namespace: str, release_label: str, pin: DcgmExporterPin) -> dict[str, Any]:
    """Selects the chart's Service by its selector labels. `honorLabels` keeps the exporter's pod/namespace/
    container labels (the pod that holds the GPU) instead of renaming them `exported_*`."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": {"name": "dcgm-exporter", "namespace": namespace, "labels": {RELEASE_LABEL: release_label}},
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
DATASOURCE_VARIABLE = {
    "name": "datasource",
    "label": "Prometheus",
    "type": "datasource",
    "query": "prometheus",
    "hide": 0,
}


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
        "templating": {"list": [DATASOURCE_VARIABLE, *(_query_variable(v, metrics) for v in spec.variables)]},
        "panels": panels,
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


@dataclass(frozen=True)
class MonitoringPlan:
    """The `monitoring` block resolved: with `install_prometheus` false an existing Prometheus is used,
    `release_label` being the label its selectors match and `prometheus_url` its in-cluster URL."""

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


def slo_settings(config: MonitoringConfig, facts: MonitoringFacts) -> SloSettings:
    """`monitoring.slo` over the data defaults; an unknown or bad key is a config error."""
    try:
        return SloSettings.model_validate({**facts.sloDefaults.model_dump(), **config.slo})
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, SloSettings, prefix="monitoring.slo.") from None


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
    config: MonitoringConfig,
    serving_namespace: str,
    targets: Sequence[WatchedTarget],
    criteria: Criteria,
    request_timeout_seconds: float,
    facts: MonitoringFacts,
    metrics: MetricsCatalog,
    dashboards: Sequence[DashboardSpec],
    canary: Optional[CanaryConfig],
) -> MonitoringPlan:
    """`canary`: the targets have canaries (config `operability.canary`), so the rules watch them too;
    `request_timeout_seconds`: the gateway's, the most a TTFT SLO may be."""
    slo = slo_settings(config, facts)
    check_slo_units(slo, criteria.maxTtftP50Ms, request_timeout_seconds)
    charts, namespace, prometheus = facts.charts, config.namespace, config.prometheus
    if prometheus.install:
        pin = charts.kubePrometheusStack
        release_label = pin.releaseName
        prometheus_url = f"http://{pin.prometheusService}.{namespace}.svc.cluster.local:{pin.prometheusPort}"
    else:
        assert prometheus.releaseLabel is not None  # PrometheusConfig requires both
        assert prometheus.url is not None
        release_label, prometheus_url = prometheus.releaseLabel, prometheus.url
    thresholds = AlertThresholds(criteria.maxTtftP50Ms / 1000, criteria.minTokensPerSecondPerUser, slo)
    runbooks = config.runbookBaseUrl or facts.runbookBaseUrl
    groups = rule_groups(serving_namespace, targets, thresholds, facts, metrics, runbooks, canary)
    return MonitoringPlan(
        namespace=namespace,
        create_namespace=config.creates_namespace,
        release_label=release_label,
        prometheus_url=prometheus_url,
        install_prometheus=prometheus.install,
        crds_chart=charts.prometheusOperatorCrds,
        crds_values=copy.deepcopy(OPERATOR_CRDS_VALUES),
        prometheus_chart=charts.kubePrometheusStack,
        prometheus_values=deep_merge(copy.deepcopy(KUBE_PROMETHEUS_STACK_VALUES), prometheus.values),
        install_dcgm_exporter=config.dcgmExporter,
        dcgm_exporter_chart=charts.dcgmExporter,
        dcgm_exporter_values=dcgm_exporter_values(GPU_LABEL, GPU_TAINT),
        dcgm_service_monitor=dcgm_service_monitor(namespace, release_label, charts.dcgmExporter),
        prometheus_rule={
            "apiVersion": API_VERSION,
            "kind": "PrometheusRule",
            # the `release` label is what a kube-prometheus-stack Prometheus selects rules by
            "metadata": {
                "name": "nemotron-serving",
                "namespace": namespace,
                "labels": {RELEASE_LABEL: release_label, "app.kubernetes.io/part-of": "nemotron-lightning"},
            },
            "spec": {"groups": groups},
        },
        dashboards={
            spec.uid: {f"{spec.uid}.json": json.dumps(dashboard_json(spec, metrics), indent=1, sort_keys=True)}
            for spec in dashboards
        },
    )


def deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overlay.items():
        both_maps = isinstance(value, Mapping) and isinstance(merged.get(key), Mapping)
        merged[key] = deep_merge(merged[key], value) if both_maps else value
    return merged
