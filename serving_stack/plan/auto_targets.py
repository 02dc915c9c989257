"""`targets: auto`: the stack deploys the capacity plan of its `demand:` block.

The cheapest plan (`serving_stack.plan.capacity`) becomes the config a user would otherwise write, the one
`make plan` prints under "Stack config this plan implies": one target per placement, its worker replicas
at replica sets x the recipe's published replicas, pinned to its pool; and, where the stack manages node
groups (`aws.cluster` set), one node pool per (instance type, capacity type) of the plan, all in one zone.
The model cache also downloads what the planned targets load (a draft checkpoint the config does not list is
added to `modelCache.checkpoints.drafts`: the user did not choose the targets). Every check then runs on that
config as if it had been written, so a later problem names the implied key (`targets[0]...`,
`aws.nodePools[0]...`); what only `auto` can get wrong names `demand`.

A pool's desired size is the plan's node count. With `autoscaling`, its min and max sizes hold the GPUs its
targets need at their `minReplicaSets` and `maxReplicaSets` (a target not autoscaled counts at its planned
size), so that cluster-autoscaler can follow KEDA; without it, min = desired = max.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, TypeVar

import pydantic

from serving_stack.config.autoscaling import AutoscalingConfig
from serving_stack.config.aws import AwsConfig, NodePoolConfig
from serving_stack.config.serving import AUTO_TARGETS, TargetConfig
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError, bounded, from_validation_error
from serving_stack.facts import Facts
from serving_stack.plan.capacity import Plan, cheapest_plan
from serving_stack.plan.capacity_explain import binding_constraints
from serving_stack.plan.capacity_inputs import candidate_rows, instance_offers
from serving_stack.plan.capacity_model import CandidateRow, Demand, Slo, demand_of
from serving_stack.plan.capacity_stack import plan_to_stack_config
from serving_stack.plan.model_cache import select_model_cache
from serving_stack.plan.pools import RESERVED_CAPACITY_TYPES
from serving_stack.plan.zones import check_pool_zone

PlannedBlock = TypeVar("PlannedBlock", bound=pydantic.BaseModel)


@dataclass(frozen=True)
class AutoTargets:
    """What `targets: auto` deployed, for `summary.md`: the demand as the planner read it, and its plan."""

    demand: Demand
    plan: Plan


def expand_auto_targets(config: StackConfig, facts: Facts) -> tuple[StackConfig, Optional[AutoTargets]]:
    """The config with `targets` (and `aws.nodePools`) set from the plan, or the config as is without `auto`."""
    if config.targets != AUTO_TARGETS:
        return config, None
    if config.demand is None:
        raise ConfigError(
            "demand",
            "required with targets: auto (the capacity plan sizes the targets from it)",
            "a demand block (docs/capacity.md), or a list of targets",
        )
    unknown = config.demand.unknown_gpu_types(list(facts.aws.gpus))
    if unknown:
        raise ConfigError("demand.gpuTypes", f"unknown GPU type(s) {', '.join(unknown)}", ", ".join(facts.aws.gpus))
    criteria = facts.catalog.criteria
    demand = demand_of(config.demand, Slo(criteria.minTokensPerSecondPerUser, criteria.maxTtftP50Ms))
    rows = candidate_rows(facts.catalog, facts.aws)
    offers = instance_offers(facts.aws, facts.capacity_prices)
    try:
        plan = cheapest_plan(demand, rows, offers)
        if plan is None:
            raise ConfigError("demand", binding_constraints(demand, rows, offers).message)
    except ConfigError:
        raise
    except Exception as solver_error:  # highspy raises a bare Exception ("Error adding constraint to the model.")
        problem = f"the capacity solver cannot plan this demand: {bounded(str(solver_error), quote=False)}"
        raise ConfigError("demand", problem) from None
    reserved = sorted(
        {
            f"{u.pool.instance_type} ({u.pool.capacity_type})"
            for u in plan.pools
            if u.pool.capacity_type in RESERVED_CAPACITY_TYPES
        }
    )
    if reserved:
        raise ConfigError(
            "demand.capacityTypes",
            f"the plan buys {', '.join(reserved)}, which launches into a "
            "reservation whose id targets: auto cannot know",
            "on-demand; or list the targets and aws.nodePools with capacityReservationId",
        )
    by_id = {row.target_id: row for row in rows}
    aws = config.aws
    if aws is not None and aws.nodePools:
        raise ConfigError(
            "aws.nodePools",
            "targets: auto plans the GPU node pools",
            "no nodePools with targets: auto; or list the targets",
        )
    if aws is None or aws.cluster is None:  # nodes the stack does not manage: the targets alone
        targets = plan_to_stack_config(plan, by_id)["targets"]
        return _with(
            config, [{k: v for k, v in t.items() if k != "nodePool"} for t in targets], None, facts
        ), AutoTargets(demand, plan)
    zone = _zone(config.demand.availabilityZone, aws)
    implied = plan_to_stack_config(plan, by_id, availability_zone=zone)
    pools = [_sized(entry, plan, by_id, config.autoscaling) for entry in implied["nodePools"]]
    for pool in pools:
        error = check_pool_zone(
            "demand", zone, facts.aws.instance_types.get(pool["instanceType"]), aws, facts.aws.regions
        )
        if error is not None:
            problem = str(error).removeprefix(f"{error.key_path}: ")
            raise ConfigError(error.key_path, f"the plan's {pool['instanceType']} pool: {problem}")
    return _with(
        config,
        implied["targets"],
        aws.model_copy(update={"nodePools": [_planned(NodePoolConfig, pool, "aws.nodePools") for pool in pools]}),
        facts,
    ), AutoTargets(demand, plan)


def _with(config: StackConfig, targets: list[dict[str, Any]], aws: Optional[AwsConfig], facts: Facts) -> StackConfig:
    cache = config.modelCache
    loaded = [repo for target in targets for repo in facts.catalog.recipe(target["id"]).checkpoints]
    selection = select_model_cache(cache, facts.catalog.model_cache, set(loaded))[0]
    missing = [repo for repo in dict.fromkeys(loaded) if repo not in selection.repos]
    update: dict[str, Any] = {"targets": [_planned(TargetConfig, target, "targets") for target in targets]}
    if missing:  # the planned targets load checkpoints the cache would not fetch: fetch them too
        fetched = [repo for job in selection.jobs for _, repo in job.checkpoints]
        base = cache.checkpoints.base or fetched[0]
        drafts = [repo for repo in dict.fromkeys(fetched) if repo != base] + missing
        checkpoints = cache.checkpoints.model_copy(update={"base": base, "drafts": drafts})
        update["modelCache"] = cache.model_copy(update={"checkpoints": checkpoints})
    if aws is not None:
        update["aws"] = aws
    return config.model_copy(update=update)


def _planned(model: type[PlannedBlock], value: dict[str, Any], where: str) -> PlannedBlock:
    """A planned target or pool as config, or a `ConfigError` naming `demand` when the plan exceeds a bound
    of the config (more replicas of a target, or nodes in a pool, than a stack may set)."""
    try:
        return model.model_validate(value)
    except pydantic.ValidationError as exc:
        bound = from_validation_error(exc, model, prefix=f"{where}: ")
        raise ConfigError(
            "demand", f"the plan for this demand exceeds a bound of the stack ({bound})", "a smaller demand"
        ) from None


def _zone(wanted: Optional[str], aws: AwsConfig) -> str:
    """`demand.availabilityZone`, else the created cluster's first AZ or the existing cluster's first subnet zone."""
    if wanted:
        return wanted
    assert aws.cluster is not None
    create, existing = aws.cluster.create, aws.cluster.existing
    if create is not None:
        return str(create.availabilityZones[0])
    assert existing is not None
    return str(sorted(existing.privateSubnetIds)[0])


def _sized(
    entry: dict[str, Any], plan: Plan, rows: dict[str, CandidateRow], autoscaling: Optional[AutoscalingConfig]
) -> dict[str, Any]:
    """The pool entry with min and max sizes that hold its targets' GPUs at their autoscaling bounds."""
    (use,) = [
        u
        for u in plan.pools
        if u.pool.instance_type == entry["instanceType"] and u.pool.capacity_type == entry["capacityType"]
    ]
    least = most = 0
    for placement in plan.placements:
        if placement.pool != use.pool:
            continue
        per_set = rows[placement.target_id].gpus_per_replica_set
        bounds = autoscaling.targets.get(placement.target_id) if autoscaling else None
        least += per_set * (bounds.minReplicaSets if bounds else placement.replica_sets)
        most += per_set * (bounds.maxReplicaSets if bounds else placement.replica_sets)
    per_node = use.pool.gpus_per_node
    return {
        **entry,
        "minSize": min(math.ceil(least / per_node), use.nodes),
        "maxSize": max(math.ceil(most / per_node), use.nodes),
    }
