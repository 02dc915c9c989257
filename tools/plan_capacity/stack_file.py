"""A capacity plan as the stack config it implies, and written into `Pulumi.<stack>.yaml`.

The cheapest plan becomes the config a user would otherwise write: one target per placement, its worker
replicas at replica sets x the recipe's published replicas, pinned to its pool; and, where the stack manages
node groups (`aws.cluster` set), one node pool per (instance type, capacity type) of the plan, all in one zone
(`demand.availabilityZone`, default the cluster's first). A pool's desired size is the plan's node count; with
`autoscaling`, its min and max sizes hold the GPUs its targets need at their `minReplicaSets` and
`maxReplicaSets` (a target not autoscaled counts at its planned size), so that cluster-autoscaler can follow
KEDA; without it, min = desired = max. The model cache also downloads what the planned targets load (a draft
checkpoint the stack does not list is added to `modelCache.checkpoints.drafts`).

`stack_file_text` puts the result into the stack file with ruamel.yaml's round trip, so its comments and
the order of its keys stay; `check_planned_file` runs the program's checks on that text before it is written, so
WRITE=1 never leaves a stack file the render refuses.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any, Optional

import pydantic

from serving_stack.config.autoscaling import AutoscalingConfig
from serving_stack.config.aws import AwsConfig, NodePoolConfig
from serving_stack.config.secrets import required_secrets
from serving_stack.config.serving import TargetConfig
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError, from_validation_error
from serving_stack.facts import Facts
from serving_stack.plan.model_cache import select_model_cache
from serving_stack.plan.pools import RESERVED_CAPACITY_TYPES, check_pool_zone
from serving_stack.plan.stack import build_plan
from serving_stack.plan.throughput import CandidateRow
from tools.plan_capacity.model import Pool
from tools.plan_capacity.solver import Plan
from tools.secret_placeholders import stack_config_of
from tools.stack_files import parse_yaml, stack_file_config


def pool_name(pool: Pool) -> str:
    """A DNS label naming the instance type and how it is bought, e.g. `p5en-48xlarge-on-demand`."""
    return f"{pool.instance_type.replace('.', '-')}-{pool.capacity_type}"


def plan_to_stack_config(
    plan: Plan,
    rows: dict[str, CandidateRow],
    *,
    availability_zone: Optional[str] = None,
    scale_to_zero: bool = False,
    extra_max_nodes: int = 0,
) -> dict[str, Any]:
    """`targets` with each worker component at replica sets x its published replicas, pinned to its pool;
    `nodePools` sized to the plan (`minSize` 0 with `scale_to_zero`, `maxSize` + `extra_max_nodes` for
    the autoscalers' room to grow)."""
    targets = [
        {
            "id": placement.target_id,
            "replicas": {
                name: count * placement.replica_sets
                for name, count in sorted(rows[placement.target_id].worker_replicas.items())
            },
            "nodePool": pool_name(placement.pool),
        }
        for placement in plan.placements
    ]
    node_pools = []
    for use in plan.pools:
        entry: dict[str, Any] = {
            "name": pool_name(use.pool),
            "instanceType": use.pool.instance_type,
            "capacityType": use.pool.capacity_type,
            "minSize": 0 if scale_to_zero else use.nodes,
            "desiredSize": use.nodes,
            "maxSize": use.nodes + extra_max_nodes,
        }
        if availability_zone:
            entry["availabilityZone"] = availability_zone
        node_pools.append(entry)
    return {"targets": targets, "nodePools": node_pools}


StackChanges = dict[str, Any]  # config key path below the project (`aws.nodePools`) -> the whole value written


def stack_changes(config: StackConfig, plan: Plan, rows: dict[str, CandidateRow], facts: Facts) -> StackChanges:
    """What the plan writes into this stack: `targets`, and where the stack manages node groups
    `aws.nodePools`, and `modelCache.checkpoints` when the planned targets load a checkpoint the cache would not
    fetch; or a `ConfigError` naming what the stack or demand must change."""
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
            f"the plan buys {', '.join(reserved)}, which launches into a reservation whose id the plan cannot know",
            "on-demand; or write the targets and aws.nodePools with capacityReservationId by hand",
        )
    aws = config.aws
    if aws is None or aws.cluster is None:  # nodes the stack does not manage: the targets alone
        targets = [{k: v for k, v in t.items() if k != "nodePool"} for t in plan_to_stack_config(plan, rows)["targets"]]
        _within_bounds(TargetConfig, targets, "targets")
        return _with_checkpoints({"targets": targets}, config, facts)
    assert config.demand is not None
    zone = _zone(config.demand.availabilityZone, aws)
    implied = plan_to_stack_config(plan, rows, availability_zone=zone)
    pools = [_sized(entry, plan, rows, config.autoscaling) for entry in implied["nodePools"]]
    for pool in pools:
        error = check_pool_zone(
            "demand", zone, facts.aws.instance_types.get(pool["instanceType"]), aws, facts.aws.regions
        )
        if error is not None:
            problem = str(error).removeprefix(f"{error.key_path}: ")
            raise ConfigError(error.key_path, f"the plan's {pool['instanceType']} pool: {problem}")
    _within_bounds(TargetConfig, implied["targets"], "targets")
    _within_bounds(NodePoolConfig, pools, "aws.nodePools")
    return _with_checkpoints({"targets": implied["targets"], "aws.nodePools": pools}, config, facts)


def _within_bounds(model: type[pydantic.BaseModel], entries: list[dict[str, Any]], where: str) -> None:
    """Each planned entry is config the stack may hold; else a `ConfigError` naming `demand` (the plan for it
    needs more replicas of a target, or nodes in a pool, than a stack may set)."""
    for entry in entries:
        try:
            model.model_validate(entry)
        except pydantic.ValidationError as exc:
            bound = from_validation_error(exc, model, prefix=f"{where}: ")
            raise ConfigError(
                "demand", f"the plan for this demand exceeds a bound of the stack ({bound})", "a smaller demand"
            ) from None


def _with_checkpoints(changes: StackChanges, config: StackConfig, facts: Facts) -> StackChanges:
    """`changes` and `modelCache.checkpoints` with the drafts the planned targets load added, unless the cache
    already fetches every checkpoint they load."""
    cache = config.modelCache
    loaded = [repo for target in changes["targets"] for repo in facts.catalog.recipe(target["id"]).checkpoints]
    selection = select_model_cache(cache, facts.catalog.model_cache, facts.checkpoints, set(loaded))[0]
    missing = [repo for repo in dict.fromkeys(loaded) if repo not in selection.repos]
    if not missing:
        return changes
    fetched = [repo for job in selection.jobs for _, repo in job.checkpoints]
    base = cache.checkpoints.base or fetched[0]
    drafts = [repo for repo in dict.fromkeys(fetched) if repo != base] + missing
    return {**changes, "modelCache.checkpoints": {"base": base, "drafts": drafts}}


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


def stack_file_text(path: Path, project: str, changes: StackChanges) -> str:
    """The stack file with the planned keys set in place: comments, quotes, key order and the rest of the file
    stay. A comment below the old value (YAML keeps it with the value's last line: it introduces the next key)
    moves to the new value's last line."""
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 120
    document = yaml.load(path.read_text())
    config = document["config"]
    for key, value in changes.items():  # `targets` at the top, `aws.nodePools` in its block
        block, _, name = key.rpartition(".")
        mapping, name = (config[f"{project}:{block}"], name) if block else (config, f"{project}:{name}")
        _replace(mapping, name, value)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def check_planned_file(text: str, project: str, facts: Facts) -> None:
    """The planned stack file passes every check the program runs before its first resource (the config, then
    the plan), or a `ConfigError` naming the key of the file that a render would refuse: a key the plan left
    stale (autoscaling bounds of a target it dropped) is the user's to change, before anything is written."""
    try:
        raw, _ = stack_file_config(parse_yaml(text, "the planned stack file"), project, "the planned stack file")
        config = stack_config_of(raw, project)
        region = raw.get("aws:region")
        build_plan(config, facts, default_region=region, secrets=frozenset(required_secrets(config)))
    except ConfigError as error:
        problem = str(error).removeprefix(f"{error.key_path}: ")
        raise ConfigError(
            error.key_path, f"the planned stack file would be refused (nothing written): {problem}"
        ) from None


def _replace(mapping: Any, key: str, value: Any) -> None:
    from ruamel.yaml.comments import CommentedBase

    new = _commented(value)
    old = mapping.get(key)
    if old is not None:
        old_holder, new_holder = _last_line(old), _last_line(new)
        if old_holder is not None and new_holder is not None:
            comment = old_holder[0].ca.items.get(old_holder[1])
            if comment is not None and isinstance(new_holder[0], CommentedBase):
                new_holder[0].ca.items[new_holder[1]] = comment
    mapping[key] = new


def _commented(value: Any) -> Any:
    """Plain data as ruamel's round-trip containers, which carry comments."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        return CommentedMap((k, _commented(v)) for k, v in value.items())
    if isinstance(value, list):
        return CommentedSeq(_commented(v) for v in value)
    return value


def _last_line(node: Any) -> Optional[tuple[Any, Any]]:
    """The (container, key or index) of the value written last under `node`: where a trailing comment lives."""
    holder = None
    while isinstance(node, (dict, list)) and len(node):
        key = next(reversed(node)) if isinstance(node, dict) else len(node) - 1
        holder, node = (node, key), node[key]
    return holder
