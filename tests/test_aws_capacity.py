"""Capacity as AWS sells each instance type (catalog data): On-Demand, Spot, an ODCR the pool targets, a
Capacity Block. A pool may use only what its type is sold as; reservations name their id and nothing else
does; a Capacity Block pool states the version its nodes run, and a version change reaches it only at
size 0 (EKS upgrades a Capacity Block group only then)."""

from __future__ import annotations

import typing

import pytest
from aws_helpers import KUBERNETES_VERSION, RESERVATION, capacity_fields, eks_config, node_pool
from plan_helpers import plan_of

from serving_stack.errors import ConfigError
from serving_stack.facts.aws import load_aws_catalog
from serving_stack.names import CapacityType
from serving_stack.plan.pools import RESERVED_CAPACITY_TYPES

INSTANCES = load_aws_catalog().instance_types
CAPACITY_TYPES = typing.get_args(CapacityType)
OFFERED = [(name, capacity) for name, i in sorted(INSTANCES.items()) for capacity in i.capacityTypes]
NOT_OFFERED = [
    (name, capacity)
    for name, i in sorted(INSTANCES.items())
    for capacity in CAPACITY_TYPES
    if capacity not in i.capacityTypes
]
CB_TYPES = sorted(name for name, i in INSTANCES.items() if "capacity-block" in i.capacityTypes)
NEXT_VERSION = f"1.{int(KUBERNETES_VERSION.split('.')[1]) + 1}"


def spec_of(instance_type: str, **fields):
    (spec,) = plan_of(eks_config([node_pool("pool", instance_type, **fields)], [])).managed_pools
    return spec


def rejected(raw: dict) -> str:
    with pytest.raises(ConfigError) as raised:
        plan_of(raw)
    return str(raised.value)


def with_version(version: str) -> dict:
    cluster = eks_config([], [])["aws"]["cluster"]
    return {"create": {**cluster["create"], "kubernetesVersion": version}}


@pytest.mark.parametrize(("instance_type", "capacity"), OFFERED)
def test_each_offered_capacity_type_plans_as_aws_documents_it(instance_type, capacity):
    spec = spec_of(instance_type, **capacity_fields(instance_type, capacity))
    reserved, block = capacity in RESERVED_CAPACITY_TYPES, capacity == "capacity-block"
    assert spec.eks_capacity_type == {"spot": "SPOT", "capacity-block": "CAPACITY_BLOCK"}.get(capacity, "ON_DEMAND")
    assert spec.capacity_reservation_id == (RESERVATION if reserved else None)
    assert spec.market_type == ("capacity-block" if block else None)
    assert spec.instance_type_on_launch_template is block
    # A reservation is placed where it was reserved: no placement group of the stack's own.
    assert spec.placement_group is (spec.efa and not reserved)
    assert spec.kubernetes_version == KUBERNETES_VERSION


@pytest.mark.parametrize(("instance_type", "capacity"), NOT_OFFERED)
def test_a_capacity_type_aws_does_not_sell_the_type_as_is_rejected(instance_type, capacity):
    message = rejected(eks_config([node_pool("pool", instance_type, **capacity_fields(instance_type, capacity))], []))
    assert (
        f"aws.nodePools[0].capacityType: {instance_type} is not sold as {capacity}; "
        f"allowed: {', '.join(INSTANCES[instance_type].capacityTypes)}"
    ) in message


@pytest.mark.parametrize("capacity", RESERVED_CAPACITY_TYPES)
def test_a_reservation_needs_its_id(capacity):
    instance_type = next(name for name, c in OFFERED if c == capacity)
    fields = {k: v for k, v in capacity_fields(instance_type, capacity).items() if k != "capacityReservationId"}
    assert f"aws.nodePools[0].capacityReservationId: required with capacityType {capacity}" in rejected(
        eks_config([node_pool("pool", instance_type, **fields)], [])
    )


@pytest.mark.parametrize("capacity", sorted(set(CAPACITY_TYPES) - set(RESERVED_CAPACITY_TYPES)))
def test_only_a_reservation_takes_a_reservation_id(capacity):
    instance_type = next(name for name, c in OFFERED if c == capacity)
    fields = {**capacity_fields(instance_type, capacity), "capacityReservationId": RESERVATION}
    assert (
        f"aws.nodePools[0].capacityType: capacityReservationId goes with a reservation; allowed: "
        f"{', '.join(RESERVED_CAPACITY_TYPES)}"
    ) in rejected(eks_config([node_pool("pool", instance_type, **fields)], []))


@pytest.mark.parametrize("instance_type", CB_TYPES)
def test_a_capacity_block_pool_states_its_nodes_version(instance_type):
    fields = {k: v for k, v in capacity_fields(instance_type, "capacity-block").items() if k != "kubernetesVersion"}
    assert "aws.nodePools[0].kubernetesVersion: required for capacity-block pool 'pool'" in rejected(
        eks_config([node_pool("pool", instance_type, **fields)], [])
    )


@pytest.mark.parametrize("instance_type", CB_TYPES)
def test_a_cluster_upgrade_with_a_capacity_block_pool_above_size_0_is_rejected_naming_the_pool(instance_type):
    raw = eks_config(
        [node_pool("ultra", instance_type, minSize=1, **capacity_fields(instance_type, "capacity-block"))],
        [],
        cluster=with_version(NEXT_VERSION),
    )
    message = rejected(raw)
    assert (
        f"aws.nodePools[0].desiredSize: capacity-block pool 'ultra' moves from Kubernetes {KUBERNETES_VERSION} to "
        f"{NEXT_VERSION}; EKS upgrades a Capacity Block group only at size 0"
    ) in message
    assert message.endswith("allowed: 0")


@pytest.mark.parametrize("instance_type", CB_TYPES)
def test_at_size_0_the_capacity_block_group_moves_to_the_clusters_version(instance_type):
    raw = eks_config(
        [
            node_pool(
                "ultra", instance_type, minSize=0, desiredSize=0, **capacity_fields(instance_type, "capacity-block")
            )
        ],
        [],
        cluster=with_version(NEXT_VERSION),
    )
    (spec,) = plan_of(raw).managed_pools
    assert (spec.kubernetes_version, spec.min_size, spec.desired_size) == (NEXT_VERSION, 0, 0)


def test_other_pools_upgrade_in_place_and_no_pool_runs_newer_than_the_cluster():
    on_demand = next(name for name, c in OFFERED if c == "on-demand")
    raw = eks_config(
        [node_pool("pool", on_demand, kubernetesVersion=KUBERNETES_VERSION)], [], cluster=with_version(NEXT_VERSION)
    )
    assert plan_of(raw).managed_pools[0].kubernetes_version == NEXT_VERSION
    newer = eks_config([node_pool("pool", on_demand, kubernetesVersion=NEXT_VERSION)], [])
    assert (
        rejected(newer)
        == f"aws.nodePools[0].kubernetesVersion: {NEXT_VERSION} is newer than the cluster's {KUBERNETES_VERSION}"
    )
