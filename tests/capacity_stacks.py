"""Stack configs for the capacity wiring tests: a committed config with the plan of its `demand:` written in
as `make plan ... WRITE=1` writes it, every planned target under the autoscaler, its bounds derived from the
plan (so they move with the data)."""

from __future__ import annotations

from typing import Any

from capacity_demands import CRITERIA, OFFERS, ROWS
from plan_helpers import FACTS

from serving_stack.config import parse_stack_config
from serving_stack.config.demand import DemandConfig
from serving_stack.facts import load_facts
from tools.plan_capacity.model import demand_of, search_space, unit
from tools.plan_capacity.solver import Plan, solve
from tools.plan_capacity.stack_file import stack_changes

PROMETHEUS_URL = "http://prometheus.example.svc:9090"


def plan_of_demand(config: dict[str, Any]) -> Plan:
    """The plan the stack's `demand:` block gets (what `make plan` writes)."""
    demand = demand_of(DemandConfig.model_validate(config["demand"]), CRITERIA)
    plan = solve(search_space(demand, ROWS, OFFERS), unit(demand))
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


def autoscaled_planned_targets(config: dict[str, Any]) -> None:
    """The demand's planned targets (and, on a created cluster, its pools) instead of the listed ones, as
    `make plan ... WRITE=1` writes them; every planned target scaled with load."""
    plan = plan_of_demand(config)
    config["autoscaling"] = {"targets": scaling_bounds(plan)}
    at_autoscaler_minor(config)
    if not config.get("monitoring", {}).get("enabled", True):
        config["autoscaling"]["prometheusUrl"] = PROMETHEUS_URL
    stack = parse_stack_config({key: value for key, value in config.items() if key != "targets"})
    changes = stack_changes(stack, plan, {row.target_id: row for row in ROWS}, load_facts())
    for key, value in changes.items():
        block, _, name = key.rpartition(".")
        (config[block] if block else config)[name] = value
