"""A subnet the stack derives from `aws.cluster.create.vpcCidr` holds every address its nodes can take at the pools'
maxSize on the VPC CNI (catalog/name_limits.yaml `podAddresses`): a pool that fills its zone's subnet to the
address plans, one node more is refused naming the VPC key; a type without published limits plans with a warning
naming the pool and the data's reason. Sizes come from the data and the layout, never from literals."""

from __future__ import annotations

import ipaddress

import pytest
from aws_helpers import CLUSTER, capacity_fields, eks_config, node_pool
from plan_helpers import plan_of

from serving_stack.config.stack import parse_stack_config
from serving_stack.errors import ConfigError
from serving_stack.facts.aws import load_aws_catalog
from serving_stack.facts.name_limits import load_name_limits
from serving_stack.plan.cluster import subnet_cidrs

ROOM = load_name_limits().podAddresses
CATALOG = load_aws_catalog()
SMALLEST_VPC = "10.0.0.0/20"  # the narrowest aws.cluster.create.vpcCidr the plan takes
AZ_TYPES = [
    t for t in ROOM.instanceTypes if t in CATALOG.instance_types and not CATALOG.instance_types[t].local_zones_only
]


def config(instance_type: str, max_size: int) -> dict:
    pool = node_pool("gpu", instance_type, minSize=0, desiredSize=0, maxSize=max_size, **capacity_fields(instance_type))
    return eks_config([pool], [], cluster={"create": {**CLUSTER["create"], "vpcCidr": SMALLEST_VPC}})


@pytest.mark.parametrize("instance_type", AZ_TYPES)
def test_a_pool_fills_its_zone_subnet_and_one_node_more_is_refused(instance_type: str) -> None:
    system = parse_stack_config(config(instance_type, 1)).aws.systemNodeGroup  # type: ignore[union-attr]
    zones = len(CLUSTER["create"]["availabilityZones"])
    subnet = ipaddress.ip_network(subnet_cidrs(SMALLEST_VPC, zones)[0][0])
    system_take = system.maxSize * max(ROOM.per_node(t) or 0 for t in system.instanceTypes)
    per_node = ROOM.per_node(instance_type)
    assert per_node, instance_type
    fits = (subnet.num_addresses - ROOM.subnetReserved - ROOM.eksInterfaces - system_take) // per_node
    assert fits >= 1, f"{instance_type}: not one node fits a {SMALLEST_VPC} VPC's zone subnet"
    assert plan_of(config(instance_type, fits)).pools[0].max_size == fits
    with pytest.raises(ConfigError) as raised:
        plan_of(config(instance_type, fits + 1))
    assert str(raised.value).startswith(f"aws.cluster.create.vpcCidr: us-east-1a's subnet /{subnet.prefixlen} ")


@pytest.mark.parametrize("instance_type", sorted(ROOM.unlisted))
def test_a_type_without_published_limits_plans_with_a_warning(instance_type: str) -> None:
    assert ROOM.per_node(instance_type) is None, f"{instance_type} is listed and unlisted"
    pool = node_pool("gpu", instance_type, **capacity_fields(instance_type))
    warnings = plan_of(eks_config([pool], [])).warnings
    assert f"aws.nodePools[0]: subnet addresses of {instance_type} not checked ({ROOM.unlisted[instance_type]})" in (
        warnings
    )


@pytest.mark.parametrize("instance_type", sorted(ROOM.unlisted))
def test_a_local_zone_pool_is_held_against_its_own_subnet(instance_type: str, monkeypatch) -> None:
    """Were the type's limits published: its Local Zone subnet (not the AZ's) holds its pool, or the plan refuses
    naming the pool's subnet; planted per-node figures just under and just over what the subnet holds."""
    from serving_stack.facts.name_limits import NodeAddresses
    from serving_stack.plan import cluster
    from serving_stack.plan.cluster import local_zone_cidrs

    pool = node_pool("gpu", instance_type, **capacity_fields(instance_type))
    raw = eks_config([pool], [], cluster={"create": {**CLUSTER["create"], "vpcCidr": SMALLEST_VPC}})
    room = ipaddress.ip_network(local_zone_cidrs(SMALLEST_VPC, 1)[0]).num_addresses - ROOM.subnetReserved
    for per_node, refused in ((room // pool["maxSize"], False), (room // pool["maxSize"] + 1, True)):
        planted = ROOM.model_copy(update={"instanceTypes": {instance_type: NodeAddresses(enis=1, ipv4PerEni=per_node)}})
        limits = load_name_limits().model_copy(update={"podAddresses": planted})
        monkeypatch.setattr(cluster, "load_name_limits", lambda limits=limits: limits)
        if not refused:
            assert plan_of(raw).pools[0].max_size == pool["maxSize"]
            continue
        with pytest.raises(ConfigError) as raised:
            plan_of(raw)
        assert str(raised.value).startswith("aws.cluster.create.vpcCidr: aws.nodePools[0]'s subnet /"), raised.value
