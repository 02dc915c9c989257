"""The PrometheusRule of the stack: the published criteria and the stack's SLOs as alerts, per target.

Pure: plain data in (targets, thresholds, facts, metric names), a `monitoring.coreos.com/v1` manifest out.
Every alert selects one target's pods by name: the Dynamo operator names a component's Deployment
`<dgd>-<component in lower case>` (deploy/cloud/operator graph.go GetDynamoComponentName), so its pods are
`<dgd>-<component>-<replicaset hash>-<pod hash>`. Frontend alerts read frontend metrics, which carry
no target label of their own.

Not alerted, on purpose (docs/monitoring.md says why): MoE expert-load imbalance (no engine exports a
per-expert load metric) and a *direct* LIBFABRIC fallback signal (no metric names the NIXL backend in use:
the backend choice is only in the worker log, so `NemotronKvTransferSlowerThanFabric` alerts on its
symptom, a TTFT far above the published figure, and says so). The canary rules are in `canary_alerts`.

Over ~250 lines because `_RuleBuilder` holds every alert's expression, one method each, side by side with
the selectors and windows they share: read together they are checked against the criteria together.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.facts.metrics import MetricsCatalog
from serving_stack.facts.monitoring import MonitoringFacts, SloSettings
from serving_stack.plan.canary_alerts import CanaryAlerting, canary_alerts

API_VERSION = "monitoring.coreos.com/v1"
RELEASE_LABEL = "release"
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


@dataclass(frozen=True)
class _Alert:
    name: str
    expr: str
    summary: str
    description: str


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
            builder.rule(_Alert(*alert), {"target": target.target_id})
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

    def rule(self, alert: _Alert, labels: dict[str, str]) -> dict[str, Any]:
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

    def ttft(self, target: WatchedTarget, frontend: str, quantile: float, limit: float, name: str, what: str) -> _Alert:
        percentile = f"p{round(quantile * 100)}"
        return _Alert(
            name,
            f"{self._quantile(quantile, frontend)} > {limit:g}",
            f"{target.target_id}: TTFT {percentile} above {what} ({limit:g} s)",
            f"TTFT {percentile} over {self.window} is {VALUE} s, above {what} of {limit:g} s.",
        )

    def tokens_per_user(self, target: WatchedTarget, frontend: str) -> _Alert:
        itl = self.m.metric("dynamoFrontend", "interTokenLatency").name
        limit = self.t.min_tokens_per_second_per_user
        tokens_per_second = (
            f"sum by (namespace) (rate({itl}_count{{{frontend}}}[{self.window}]))"
            f" / sum by (namespace) (rate({itl}_sum{{{frontend}}}[{self.window}]))"
        )
        return _Alert(
            "NemotronTokensPerUserBelowCriteria",
            f"{tokens_per_second} < {limit:g}",
            f"{target.target_id}: tokens/s per user below the published criterion ({limit:g})",
            f"Tokens/s per user (1 / mean inter-token latency) over {self.window} is {VALUE}, below {limit:g}.",
        )

    def kv_cache(self, target: WatchedTarget, workers: str) -> _Alert:
        usage = self.m.metric("dynamoWorker", "kvCacheUsage").name
        limit = self.t.slo.maxKvCacheUsage
        return _Alert(
            "NemotronKvCacheNearlyFull",
            f"max by (namespace, pod) ({usage}{{{workers}}}) > {limit:g}",
            f"{target.target_id}: KV cache of {{{{ $labels.pod }}}} above {limit:.0%}",
            f"KV cache usage of {{{{ $labels.pod }}}} is {VALUE} (a 0..1 fraction), above {limit:g}: new requests queue or preempt.",
        )

    def queue_growth(self, target: WatchedTarget, frontend: str) -> _Alert:
        stage = self.m.metric("dynamoFrontend", "stageRequests")
        queued = f'{stage.name}{{{frontend}, stage=~"{stage.regex("stage", "queued")}"}}'
        window, limit = self.t.slo.queueGrowthWindow, self.t.slo.queueGrowthRequests
        return _Alert(
            "NemotronQueueGrowing",
            f"sum by (namespace) ({queued}) - sum by (namespace) ({queued} offset {window}) > {limit:g}",
            f"{target.target_id}: frontend queue grew by more than {limit:g} requests in {window}",
            f"The frontend queue ({', '.join(stage.values('stage', 'queued'))}) grew by {VALUE} requests over {window}.",
        )

    def error_ratio(self, target: WatchedTarget, frontend: str) -> _Alert:
        requests = self.m.metric("dynamoFrontend", "requests")
        status = requests.values("status", "error")[0]
        errors = f'{frontend}, status="{status}", error_type!~"{requests.regex("error_type", "client")}"'
        limit = self.t.slo.maxErrorRatio
        return _Alert(
            "NemotronErrorRatioHigh",
            f"sum by (namespace) (rate({requests.name}{{{errors}}}[{self.window}]))"
            f" / sum by (namespace) (rate({requests.name}{{{frontend}}}[{self.window}])) > {limit:g}",
            f"{target.target_id}: more than {limit:.0%} of requests fail",
            f"{VALUE} of requests over {self.window} failed server-side (client errors excluded), above {limit:g}.",
        )

    def worker_restarts(self, target: WatchedTarget, workers: str) -> _Alert:
        restarts = f"{self.m.metric('kubeStateMetrics', 'containerRestarts').name}{{{workers}}}"
        window, limit = self.t.slo.workerRestartWindow, self.t.slo.maxWorkerRestarts
        # max - min over the window counts restarts exactly; increase() would extrapolate N restarts past N.
        return _Alert(
            "NemotronWorkerRestarting",
            f"max_over_time({restarts}[{window}]) - min_over_time({restarts}[{window}]) > {limit:g}",
            f"{target.target_id}: worker {{{{ $labels.pod }}}} restarted",
            f"Container {{{{ $labels.container }}}} of {{{{ $labels.pod }}}} restarted {VALUE} times in {window} (allowed: {limit:g}).",
        )

    def gpu_memory(self, target: WatchedTarget, workers: str) -> _Alert:
        used, free, reserved = (
            f"{self.m.metric('dcgm', key).name}{{{workers}}}"
            for key in ("framebufferUsed", "framebufferFree", "framebufferReserved")
        )
        limit = self.t.slo.maxGpuMemoryRatio
        return _Alert(
            "NemotronGpuMemoryHigh",
            f"{used} / ({used} + {free} + {reserved}) > {limit:g}",
            f"{target.target_id}: GPU {{{{ $labels.gpu }}}} of {{{{ $labels.pod }}}} above {limit:.0%} memory",
            f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.Hostname }}}} uses {VALUE} of its memory, above {limit:g}: "
            "more than the engine preallocates, an out-of-memory is near.",
        )

    def kv_fabric_symptom(self, target: WatchedTarget, frontend: str, published_ttft_p50_seconds: float) -> _Alert:
        limit = round(self.t.slo.kvFallbackTtftFactor * published_ttft_p50_seconds, 4)
        return _Alert(
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
