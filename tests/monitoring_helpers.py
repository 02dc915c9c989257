"""Monitoring inputs derived from the catalog (targets, criteria, default SLOs), shared by the monitoring test suites."""

from __future__ import annotations

import dataclasses
from typing import Any

from serving_stack.config.operability import OperabilityConfig
from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.monitoring import load_dashboard_specs, load_metrics, load_monitoring
from serving_stack.plan.monitoring import (
    AlertThresholds,
    MonitoringPlan,
    MonitoringSettings,
    WatchedTarget,
    alert_thresholds,
    plan_monitoring,
    rule_groups,
)
from serving_stack.plan.operability import CanaryAlerting
from serving_stack.plan.watched_targets import watched_target
from tools.mock_runtime import ProgramRun

NAMESPACE = "nemotron-test"
RUNBOOKS = "https://example.invalid/docs/monitoring.md"


def thresholds() -> AlertThresholds:
    criteria = load_catalog().criteria
    return alert_thresholds(criteria.maxTtftP50Ms, criteria.minTokensPerSecondPerUser, load_monitoring().sloDefaults)


def catalog_targets(libfabric: bool = True) -> list[WatchedTarget]:
    """Every catalog target as deployed; disaggregated ones on an EFA pool move KV over LIBFABRIC."""
    watched = []
    for recipe in load_catalog().recipes.values():
        target = watched_target(recipe.id, recipe.dgd, recipe.entry.performance.ttftP50Ms)
        watched.append(dataclasses.replace(target, kv_over_libfabric=libfabric and recipe.disaggregated))
    return watched


def canary_alerting() -> CanaryAlerting:
    """The canaries as the `operability` block's defaults configure them."""
    return CanaryAlerting(OperabilityConfig().canary.intervalSeconds)


def groups_for(targets: list[WatchedTarget], limits: AlertThresholds) -> list[dict[str, Any]]:
    return rule_groups(NAMESPACE, targets, limits, load_monitoring(), load_metrics(), RUNBOOKS, canary_alerting())


def monitoring_plan(
    install_prometheus: bool = True, install_dcgm_exporter: bool = True, **overrides: Any
) -> MonitoringPlan:
    """The plan for two catalog targets (aggregated and disaggregated) with the data's default SLOs."""
    from serving_stack.names import GPU_LABEL, GPU_TAINT

    criteria = load_catalog().criteria
    fields: dict[str, Any] = {
        "namespace": "monitoring",
        "create_namespace": install_prometheus,
        "install_prometheus": install_prometheus,
        "install_dcgm_exporter": install_dcgm_exporter,
        "slo": load_monitoring().sloDefaults,
        "runbook_base_url": RUNBOOKS,
    }
    if not install_prometheus:
        fields.update(release_label="prometheus", prometheus_url="http://prometheus-operated.observability.svc:9090")
    fields.update(overrides)
    targets = catalog_targets()
    watched = [next(t for t in targets if not t.kv_over_libfabric), next(t for t in targets if t.kv_over_libfabric)]
    return plan_monitoring(
        MonitoringSettings(**fields),
        NAMESPACE,
        watched,
        criteria.maxTtftP50Ms,
        criteria.minTokensPerSecondPerUser,
        GPU_LABEL,
        GPU_TAINT,
        load_monitoring(),
        load_metrics(),
        load_dashboard_specs(),
        canary_alerting(),
    )


def run_monitoring(plan: MonitoringPlan) -> ProgramRun:
    from aws_helpers import run_components

    from components.monitoring import Monitoring, MonitoringArgs

    def build() -> None:
        Monitoring("monitoring", MonitoringArgs(plan))

    return run_components(build)
