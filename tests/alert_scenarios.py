"""promtool unit tests generated from the thresholds the rules were built with: for each alert, input series
whose alerting quantity sits just past its threshold (the alert must fire, with these labels and annotations)
or just short of it (it must not). Every scenario also carries a neighbour target's pods (a DGD whose name
starts with this one's) far past the threshold, so a selector that leaks makes a test fail.

The quantities are modelled here independently of the rule expressions: a TTFT histogram whose quantile is
exactly v, tokens/s per user as inter-token count / sum, a queue growing linearly, and so on.

`Scenarios` is one table: a method per alert, looked up by the alert's name, all sharing the same series
helpers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.config.operability import CanaryConfig
from serving_stack.facts.monitoring import MetricsCatalog, MonitoringFacts
from serving_stack.plan.monitoring import VALUE, AlertThresholds, WatchedTarget
from serving_stack.plan.operability import CANARY_PORT, CANARY_STALE_INTERVALS, canary_name

MARGIN = 0.05
TOKENS_PER_MINUTE = 60.0
OBSERVATIONS_PER_MINUTE = 100.0
GPU_MEMORY_MIB, GPU_RESERVED_MIB = 143771.0, 512.0
Series = list[dict[str, str]]


def minutes(duration: str) -> int:
    number, unit = int(duration[:-1]), duration[-1]
    return number * {"s": 1 / 60, "m": 1, "h": 60, "d": 1440}[unit]  # type: ignore[return-value]


def beside(threshold: float, past: bool, upward: bool = True, ceiling: Optional[float] = None) -> float:
    """A value MARGIN beside the threshold (past it or short of it), rounded to the decade of the margin so
    that promtool's value and the expected `%.3g` annotation agree; never above `ceiling`."""
    margin = MARGIN if ceiling is None else min(MARGIN, (ceiling - threshold) / threshold / 2)
    sign = 1 if past == upward else -1
    step = 10 ** math.floor(math.log10(margin * threshold))
    return float(f"{round(threshold * (1 + sign * margin) / step) * step:.12g}")


def linear(per_minute: float, points: int) -> str:
    return f"0+{per_minute!r}x{points}"


def constant(value: float, points: int) -> str:
    return f"{value!r}+0x{points}"


def series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    body = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{body}}}", "values": values}


@dataclass(frozen=True)
class Scenarios:
    namespace: str
    target: WatchedTarget
    thresholds: AlertThresholds
    facts: MonitoringFacts
    metrics: MetricsCatalog
    canary: CanaryConfig

    @property
    def eval_minutes(self) -> int:
        durations = [p.for_ for p in self.facts.alerts.values()]
        windows = [
            self.facts.rateWindow,
            self.thresholds.slo.queueGrowthWindow,
            self.thresholds.slo.workerRestartWindow,
        ]
        return max(map(minutes, durations)) + max(map(minutes, windows)) + 5

    @property
    def points(self) -> int:
        return self.eval_minutes + 1

    def pod(self, component: str, neighbour: bool = False) -> str:
        dgd = f"{self.target.dgd_name}-kv-router" if neighbour else self.target.dgd_name
        return f"{dgd}-{component.lower()}-6c9f7d5b8-x2k4p"

    def frontend(self, neighbour: bool = False) -> dict[str, str]:
        return {"namespace": self.namespace, "pod": self.pod(self.target.frontend_component, neighbour)}

    def worker(self, neighbour: bool = False) -> dict[str, str]:
        return {"namespace": self.namespace, "pod": self.pod(self.target.worker_components[0], neighbour)}

    def canary_scrape(self, neighbour: bool = False) -> dict[str, str]:
        """The target labels Prometheus gives the canary pod scraped through its PodMonitor."""
        dgd = f"{self.target.dgd_name}-kv-router" if neighbour else self.target.dgd_name
        return {
            "namespace": self.namespace,
            "pod": f"{canary_name(dgd)}-6c9f7d5b8-x2k4p",
            "job": f"{self.namespace}/{canary_name(dgd)}",
            "instance": f"10.0.0.7:{CANARY_PORT}",
        }

    def canary_sample(self, neighbour: bool = False) -> dict[str, str]:
        """A canary metric as stored: the program's labels {target, model} and the scrape's."""
        return {**self.canary_scrape(neighbour), "target": self.target.target_id, "model": "nvidia/model"}

    def test_case(
        self, rule: dict[str, Any], firing: bool, background: Sequence[dict[str, str]] = ()
    ) -> dict[str, Any]:
        """One promtool test: the alert `rule` at its threshold, past it (`firing`) or short of it, beside
        `background` (other targets' healthy series)."""
        build: Callable[[bool], tuple[Series, float, dict[str, str]]] = getattr(self, _snake(rule["alert"]))
        input_series, value, labels = build(firing)
        input_series = [*input_series, *background]
        expected = [
            {
                "exp_labels": {**labels, **rule["labels"]},
                "exp_annotations": {k: _render(v, value, labels) for k, v in rule["annotations"].items()},
            }
        ]
        return {
            "interval": "1m",
            "input_series": input_series,
            "alert_rule_test": [
                {
                    "eval_time": f"{self.eval_minutes}m",
                    "alertname": rule["alert"],
                    "exp_alerts": expected if firing else [],
                }
            ],
        }

    def _ttft(self, quantile: float, value: float, neighbour_value: float) -> Series:
        name = self.metrics.metric("dynamoFrontend", "timeToFirstToken").name + "_bucket"
        out = []
        for labels, v in ((self.frontend(), value), (self.frontend(neighbour=True), neighbour_value)):
            out.append(series(name, {**labels, "le": repr(v)}, linear(quantile * OBSERVATIONS_PER_MINUTE, self.points)))
            out.append(series(name, {**labels, "le": "+Inf"}, linear(OBSERVATIONS_PER_MINUTE, self.points)))
        return out

    def nemotron_ttft_p50_above_criteria(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        limit = self.thresholds.ttft_p50_seconds
        value = beside(limit, firing)
        return self._ttft(0.5, value, 10 * limit), value, {"namespace": self.namespace}

    def nemotron_ttft_p99_above_slo(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        limit = self.thresholds.slo.ttftP99Seconds
        value = beside(limit, firing)
        return self._ttft(0.99, value, 10 * limit), value, {"namespace": self.namespace}

    def nemotron_kv_transfer_slower_than_fabric(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        limit = self.thresholds.slo.kvFallbackTtftFactor * self.target.published_ttft_p50_seconds
        value = beside(limit, firing)
        return self._ttft(0.5, value, 10 * limit), value, {"namespace": self.namespace}

    def nemotron_tokens_per_user_below_criteria(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        itl = self.metrics.metric("dynamoFrontend", "interTokenLatency").name
        limit = self.thresholds.min_tokens_per_second_per_user
        value = beside(limit, firing, upward=False)
        out = []
        for labels, tokens_per_second in ((self.frontend(), value), (self.frontend(neighbour=True), limit / 10)):
            out.append(series(f"{itl}_count", labels, linear(TOKENS_PER_MINUTE, self.points)))
            out.append(series(f"{itl}_sum", labels, linear(TOKENS_PER_MINUTE / tokens_per_second, self.points)))
        return out, value, {"namespace": self.namespace}

    def nemotron_kv_cache_nearly_full(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        usage = self.metrics.metric("dynamoWorker", "kvCacheUsage").name
        value = beside(self.thresholds.slo.maxKvCacheUsage, firing, ceiling=1.0)
        out = [
            series(usage, self.worker(), constant(value, self.points)),
            series(usage, self.worker(neighbour=True), constant(1.0, self.points)),
        ]
        return out, value, self.worker()

    def nemotron_queue_growing(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        stage = self.metrics.metric("dynamoFrontend", "stageRequests")
        slo = self.thresholds.slo
        value = beside(slo.queueGrowthRequests, firing)
        queued = stage.values("stage", "queued")
        per_minute = value / minutes(slo.queueGrowthWindow) / len(queued)
        out = [series(stage.name, {**self.frontend(), "stage": s}, linear(per_minute, self.points)) for s in queued]
        out.append(
            series(stage.name, {**self.frontend(), "stage": "not-a-queue-stage"}, linear(100 * per_minute, self.points))
        )
        out.append(
            series(
                stage.name, {**self.frontend(neighbour=True), "stage": queued[0]}, linear(100 * per_minute, self.points)
            )
        )
        return out, value, {"namespace": self.namespace}

    def nemotron_error_ratio_high(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        requests = self.metrics.metric("dynamoFrontend", "requests")
        value = beside(self.thresholds.slo.maxErrorRatio, firing, ceiling=1.0)
        error = requests.values("status", "error")[0]
        server, client = requests.values("error_type", "server")[0], requests.values("error_type", "client")[0]
        total, client_share = OBSERVATIONS_PER_MINUTE, 0.3
        rates = {
            (error, server): value * total,
            (error, client): client_share * total,
            ("success", ""): (1 - value - client_share) * total,
        }
        out = [
            series(
                requests.name,
                {**self.frontend(), "status": s, **({"error_type": t} if t else {})},
                linear(r, self.points),
            )
            for (s, t), r in rates.items()
        ]
        neighbour = {**self.frontend(neighbour=True), "status": error, "error_type": server}
        out.append(series(requests.name, neighbour, linear(total, self.points)))
        return out, value, {"namespace": self.namespace}

    def nemotron_worker_restarting(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        restarts = self.metrics.metric("kubeStateMetrics", "containerRestarts").name
        allowed = self.thresholds.slo.maxWorkerRestarts
        count = allowed + 1 if firing else allowed
        before = self.eval_minutes - 5
        values = " ".join(["0"] * before + [str(count)] * (self.points - before))
        labels = {**self.worker(), "container": "main"}
        neighbour = {**self.worker(neighbour=True), "container": "main"}
        return [series(restarts, labels, values), series(restarts, neighbour, linear(1, self.points))], count, labels

    def nemotron_gpu_memory_high(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        value = beside(self.thresholds.slo.maxGpuMemoryRatio, firing, ceiling=1.0)
        out = []
        for labels, ratio in ((self.worker(), value), (self.worker(neighbour=True), 0.999)):
            gpu = {
                **labels,
                "gpu": "0",
                "UUID": "GPU-0",
                "Hostname": "gpu-node-0",
                "modelName": "NVIDIA H200",
                "container": "main",
            }
            used = ratio * GPU_MEMORY_MIB
            parts = {
                "framebufferUsed": used,
                "framebufferReserved": GPU_RESERVED_MIB,
                "framebufferFree": GPU_MEMORY_MIB - used - GPU_RESERVED_MIB,
            }
            out += [
                series(self.metrics.metric("dcgm", key).name, gpu, constant(mib, self.points))
                for key, mib in parts.items()
            ]
        labels = {
            **self.worker(),
            "gpu": "0",
            "UUID": "GPU-0",
            "Hostname": "gpu-node-0",
            "modelName": "NVIDIA H200",
            "container": "main",
        }
        return out, value, labels

    def healthy_canary(self) -> Series:
        """This target's canary succeeding, probing and scraped: what the stale rule's `absent` needs to be silent."""
        metric = self.metrics.metric
        return [
            series(metric("canary", "probeSuccess").name, self.canary_sample(), constant(1.0, self.points)),
            series(metric("canary", "lastProbeTimestamp").name, self.canary_sample(), f"0+60x{self.points}"),
            series(metric("prometheus", "up").name, self.canary_scrape(), constant(1.0, self.points)),
        ]

    def nemotron_canary_failing(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        success = self.metrics.metric("canary", "probeSuccess").name
        value = 0.0 if firing else 1.0
        out = [
            series(success, self.canary_sample(), constant(value, self.points)),
            series(success, self.canary_sample(neighbour=True), constant(0.0, self.points)),
        ]
        return out, value, {"namespace": self.namespace}

    def nemotron_canary_stale(self, firing: bool) -> tuple[Series, float, dict[str, str]]:
        """The last probe `age` seconds old at every evaluation (promtool's time() is the minute x 60), the pod
        scraped (up 1); the neighbour's canary long silent and down."""
        last_probe, up = (
            self.metrics.metric("canary", "lastProbeTimestamp").name,
            self.metrics.metric("prometheus", "up").name,
        )
        age = beside(CANARY_STALE_INTERVALS * self.canary.intervalSeconds, firing)
        out = [
            series(last_probe, self.canary_sample(), f"{-age!r}+60x{self.points}"),
            series(up, self.canary_scrape(), constant(1.0, self.points)),
            series(last_probe, self.canary_sample(neighbour=True), constant(0.0, self.points)),
            series(up, self.canary_scrape(neighbour=True), constant(0.0, self.points)),
        ]
        return out, age, {"namespace": self.namespace}


def _snake(alert: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", alert).lower()


def _render(template: str, value: float, labels: dict[str, str]) -> str:
    text = template.replace(VALUE, f"{value:.3g}")
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)
