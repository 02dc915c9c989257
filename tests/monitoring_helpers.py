"""Monitoring inputs derived from the catalog (targets, criteria, default SLOs), shared by the monitoring test suites."""

from __future__ import annotations

import dataclasses
from typing import Any

from serving_stack.config.gateway import RouterConfig
from serving_stack.config.monitoring import MonitoringConfig
from serving_stack.config.operability import CanaryConfig, OperabilityConfig
from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.monitoring import load_dashboard_specs, load_metrics, load_monitoring
from serving_stack.plan.monitoring import (
    AlertThresholds,
    MonitoringPlan,
    WatchedTarget,
    plan_monitoring,
    rule_groups,
    watched_target,
)
from tools.mock_runtime import ProgramRun

NAMESPACE = "nemotron-test"
RUNBOOKS = "https://example.invalid/docs/monitoring.md"


def thresholds() -> AlertThresholds:
    criteria = load_catalog().criteria
    return AlertThresholds(
        criteria.maxTtftP50Ms / 1000, criteria.minTokensPerSecondPerUser, load_monitoring().sloDefaults
    )


def catalog_targets(libfabric: bool = True) -> list[WatchedTarget]:
    """Every catalog target as deployed; disaggregated ones on an EFA pool move KV over LIBFABRIC."""
    watched = []
    for recipe in load_catalog().recipes.values():
        target = watched_target(recipe.id, recipe.dgd, recipe.entry.performance.ttftP50Ms)
        watched.append(dataclasses.replace(target, kv_over_libfabric=libfabric and recipe.disaggregated))
    return watched


def canary_alerting() -> CanaryConfig:
    """The canaries as the `operability` block's defaults configure them."""
    return OperabilityConfig().canary


def groups_for(targets: list[WatchedTarget], limits: AlertThresholds) -> list[dict[str, Any]]:
    return rule_groups(NAMESPACE, targets, limits, load_monitoring(), load_metrics(), RUNBOOKS, canary_alerting())


def monitoring_plan(install_prometheus: bool = True, install_dcgm_exporter: bool = True) -> MonitoringPlan:
    """The plan for two catalog targets (aggregated and disaggregated) with the data's default SLOs."""
    prometheus: dict[str, Any] = {"install": install_prometheus}
    if not install_prometheus:
        prometheus.update(releaseLabel="prometheus", url="http://prometheus-operated.observability.svc:9090")
    config = {"prometheus": prometheus, "dcgmExporter": install_dcgm_exporter, "runbookBaseUrl": RUNBOOKS}
    targets = catalog_targets()
    watched = [next(t for t in targets if not t.kv_over_libfabric), next(t for t in targets if t.kv_over_libfabric)]
    return plan_monitoring(
        MonitoringConfig.model_validate(config),
        NAMESPACE,
        watched,
        load_catalog().criteria,
        RouterConfig().timeoutSeconds,
        load_monitoring(),
        load_metrics(),
        load_dashboard_specs(),
        canary_alerting(),
    )


def run_monitoring(plan: MonitoringPlan) -> ProgramRun:
    from aws_helpers import run_components

    from components.monitoring import Monitoring

    def build() -> None:
        Monitoring("monitoring", plan)

    return run_components(build)
