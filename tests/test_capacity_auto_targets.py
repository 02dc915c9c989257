"""`targets: auto` deploys the capacity plan of the `demand:` block: the planned targets with their replica sets,
pinned to planned pools sized for the autoscaling bounds; what cannot be planned stops the program with one
line naming `demand` (the binding constraint when nothing meets the demand), before any resource."""

from __future__ import annotations

import json
import math

import pytest
from capacity_demands import CATALOG, OFFERS, ROWS
from capacity_stacks import autoscaled_auto_targets, plan_of_demand, scaling_bounds
from plan_helpers import FACTS, plan_of
from rollout_helpers import committed_config
from stack_helpers import assert_rejected_before_any_resource

from serving_stack.errors import MAX_LINE
from serving_stack.plan.capacity_stack import pool_name

ROW = {row.target_id: row for row in ROWS}


def _auto(stack: str) -> dict:
    config = committed_config(stack)
    autoscaled_auto_targets(config)
    return config


def test_prod_auto_deploys_the_plan_with_pools_sized_for_the_autoscaling_bounds() -> None:
    config = _auto("prod")
    expected, bounds = plan_of_demand(config), config["autoscaling"]["targets"]
    plan = plan_of(config)
    assert plan.capacity.auto is not None
    assert plan.capacity.auto.plan == expected
    targets = {t.selected.id: t for t in plan.serving.targets}
    assert list(targets) == [p.target_id for p in expected.placements]
    for placement in expected.placements:
        target = targets[placement.target_id]
        workers = ROW[placement.target_id].worker_replicas
        assert {name: target.selected.replicas[name] for name in workers} == {
            name: n * placement.replica_sets for name, n in workers.items()
        }
        assert target.pool is not None
        assert target.pool.name == pool_name(placement.pool)
    pools = {p.name: p for p in plan.pools}
    assert set(pools) == {pool_name(u.pool) for u in expected.pools}
    zone = config["aws"]["cluster"]["create"]["availabilityZones"][0]
    for use in expected.pools:
        pool = pools[pool_name(use.pool)]
        on_pool = [p for p in expected.placements if p.pool == use.pool]
        gpus = {
            k: sum(ROW[p.target_id].gpus_per_replica_set * bounds[p.target_id][k] for p in on_pool)
            for k in ("minReplicaSets", "maxReplicaSets")
        }
        assert (pool.instance_type, pool.capacity_type, pool.availability_zone) == (
            use.pool.instance_type,
            use.pool.capacity_type,
            zone,
        )
        assert pool.desired_size == use.nodes
        assert pool.min_size == min(use.nodes, math.ceil(gpus["minReplicaSets"] / use.pool.gpus_per_node))
        assert pool.max_size == max(use.nodes, math.ceil(gpus["maxReplicaSets"] / use.pool.gpus_per_node))


def test_dev_auto_on_an_existing_cluster_deploys_the_targets_without_pools() -> None:
    config = _auto("dev")
    plan = plan_of(config)
    assert [t.selected.id for t in plan.serving.targets] == list(scaling_bounds(plan_of_demand(config)))
    assert plan.pools == ()
    assert all(t.pool is None for t in plan.serving.targets)
    downloaded = json.dumps(plan.serving.download_jobs)
    assert all(repo in downloaded for t in plan.serving.targets for repo in t.selected.recipe.checkpoints)


def test_auto_without_a_demand_names_demand() -> None:
    config = committed_config("prod")
    config["targets"] = "auto"
    del config["demand"], config["aws"]["nodePools"]
    assert_rejected_before_any_resource(config, "demand: required with targets: auto")


def test_a_demand_nothing_meets_names_the_binding_constraint_in_one_bounded_line() -> None:
    config = committed_config("prod")
    del config["aws"]["nodePools"]
    cheapest_node = min(p for o in OFFERS for p in o.usd_per_hour.values() if p is not None)
    config["targets"] = "auto"
    config["demand"] = {**config["demand"], "budgetUsdPerHour": cheapest_node / 2}
    assert_rejected_before_any_resource(config, "demand: no plan serves")
    with pytest.raises(Exception, match="binding constraint the budget") as caught:
        plan_of(config)
    assert len(str(caught.value)) <= MAX_LINE


def test_configured_node_pools_are_refused_with_auto() -> None:
    config = committed_config("prod")
    config["targets"] = "auto"
    assert_rejected_before_any_resource(config, "aws.nodePools: targets: auto plans the GPU node pools")


def test_a_plan_on_capacity_blocks_is_refused_for_want_of_a_reservation() -> None:
    priced = {o.gpu for o in OFFERS if o.usd_per_hour.get("capacity-block") is not None}
    config = committed_config("prod")
    config["targets"] = "auto"
    del config["aws"]["nodePools"]
    config["demand"] = {"concurrentUsers": 10, "gpuTypes": sorted(priced), "capacityTypes": ["capacity-block"]}
    assert_rejected_before_any_resource(config, "demand.capacityTypes: the plan buys")


def test_a_zone_the_planned_instance_type_cannot_launch_in_names_the_demand_zone() -> None:
    config = committed_config("prod")
    region = config["aws"]["region"]
    local_zone = next(iter(FACTS.aws.regions.local_zones(region)))
    config["targets"] = "auto"
    del config["aws"]["nodePools"]
    config["demand"] = {**config["demand"], "availabilityZone": local_zone}
    assert_rejected_before_any_resource(
        config, f"demand.availabilityZone: the plan's {plan_of_demand(config).pools[0].pool.instance_type} pool"
    )


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        ("all", "targets: must be a list of targets or the string 'auto'"),
        ([{"id": 7}], "targets[0].id: Input should be a valid string"),
        (
            [{"id": next(iter(CATALOG.recipes)), "replicas": {"agg": "2"}}],
            "targets[0].replicas.agg: Input should be a valid integer",
        ),
    ],
)
def test_targets_errors_name_the_key_not_a_union_member(targets: object, expected: str) -> None:
    config = committed_config("dev")
    config["targets"] = targets
    assert_rejected_before_any_resource(config, expected)
