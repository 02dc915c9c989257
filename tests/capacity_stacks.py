"""Stack configs for the capacity wiring tests: a committed config turned into `targets: auto` with every
planned target under the autoscaler, its bounds derived from the plan (so they move with the data)."""

from __future__ import annotations

from typing import Any

from capacity_demands import CRITERIA, OFFERS, ROWS
from plan_helpers import FACTS

from serving_stack.config.demand import DemandConfig
from serving_stack.plan.capacity import Plan, cheapest_plan
from serving_stack.plan.capacity_model import demand_of

PROMETHEUS_URL = "http://prometheus.example.svc:9090"


def plan_of_demand(config: dict[str, Any]) -> Plan:
    """The plan the stack's `demand:` block gets (what `targets: auto` deploys)."""
    plan = cheapest_plan(demand_of(DemandConfig.model_validate(config["demand"]), CRITERIA), ROWS, OFFERS)
    assert plan is not None, "the committed demand has a plan"
    return plan


def scaling_bounds(plan: Plan) -> dict[str, dict[str, int]]:
    """One replica set at least, twice the planned sets at most (room for load beyond the demand)."""
    return {p.target_id: {"minReplicaSets": 1, "maxReplicaSets": 2 * p.replica_sets} for p in plan.placements}


def at_autoscaler_minor(config: dict[str, Any]) -> dict[str, Any]:
    """The created cluster at the Kubernetes minor cluster-autoscaler's pinned image is tied to
    (catalog/autoscaling.yaml), which may be older than the committed stack's; the suite's day
    (conftest.SUITE_TODAY) has it in standard support."""
    create = config.get("aws", {}).get("cluster", {}).get("create")
    if create is not None:
        create["kubernetesVersion"] = FACTS.autoscaling.clusterAutoscaler.imageTag.removeprefix("v").rsplit(".", 1)[0]
    return config


def autoscaled_auto_targets(config: dict[str, Any]) -> None:
    """`targets: auto` instead of the listed targets and pools; every planned target scaled with load."""
    config["targets"] = "auto"
    config.get("aws", {}).pop("nodePools", None)
    config["autoscaling"] = {"targets": scaling_bounds(plan_of_demand(config))}
    at_autoscaler_minor(config)
    if not config.get("monitoring", {}).get("enabled", True):
        config["autoscaling"]["prometheusUrl"] = PROMETHEUS_URL
