"""Per instance type and capacity type of the catalog, the launch template and node group a GPU pool records
under mocks become CreateLaunchTemplate / CreateNodegroup requests that botocore's validator and the
service model's enums accept, and that follow what AWS documents but no validator (nor moto) checks:
Capacity Block instance type on the template and none on the node group, the reservation targeted, no
subnet on an interface, EFA-only interfaces = catalog count = node label = what workers request, IMDSv2
with hop limit 1, the fabric security group open both ways to itself."""

from __future__ import annotations

import functools

import pytest
from aws_helpers import capacity_fields, eks_config, inputs, node_pool, run_gpu_pool
from aws_requests import launch_template_request, node_group_request, problems
from plan_helpers import plan_of

from serving_stack.facts.aws import load_aws_catalog
from serving_stack.facts.catalog import load_catalog
from serving_stack.names import EFA_PER_GPU_LABEL, EFA_RESOURCE, GPU_RESOURCE

CATALOG = load_aws_catalog()
CASES = [(name, capacity) for name, i in sorted(CATALOG.instance_types.items()) for capacity in i.capacityTypes]
LAUNCH_TEMPLATE, NODE_GROUP = "aws:ec2/launchTemplate:LaunchTemplate", "aws:eks/nodeGroup:NodeGroup"
INGRESS, EGRESS = (
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)


def disaggregated_target(gpu: str) -> str:
    """A disaggregated catalog target of this GPU (its workers request the pool's fabric)."""
    return next(
        r.id
        for r in load_catalog().recipes.values()
        if r.disaggregated and CATALOG.gpu_of_product(r.gpu_products[0]) == gpu
    )


@functools.cache
def planned(instance_type: str, capacity: str):
    target = disaggregated_target(CATALOG.instance_types[instance_type].gpu)
    plan = plan_of(
        eks_config(
            [node_pool("pool", instance_type, maxSize=8, **capacity_fields(instance_type, capacity))], [{"id": target}]
        )
    )
    (spec,) = plan.managed_pools
    (placed,) = plan.serving.targets

    run = run_gpu_pool(spec, "pool")
    (template,) = inputs(run, LAUNCH_TEMPLATE)
    (group,) = inputs(run, NODE_GROUP)
    return launch_template_request("pool-launch-template", template), node_group_request(group), placed.dgd, run


@pytest.mark.parametrize(("instance_type", "capacity"), CASES)
def test_botocore_accepts_the_requests(instance_type, capacity):
    template, group, _, _ = planned(instance_type, capacity)
    assert problems("ec2", "CreateLaunchTemplate", template) == []
    assert problems("eks", "CreateNodegroup", group) == []


@pytest.mark.parametrize(("instance_type", "capacity"), CASES)
def test_capacity_as_eks_documents_it(instance_type, capacity):
    template, group, _, _ = planned(instance_type, capacity)
    data = template["LaunchTemplateData"]
    block, reserved = capacity == "capacity-block", capacity in ("capacity-block", "odcr")
    # Capacity Blocks: instance type on the template, none on the node group; the rest the other way round.
    assert data.get("InstanceType") == (instance_type if block else None)
    assert group.get("instanceTypes") == (None if block else [instance_type])
    assert data.get("InstanceMarketOptions") == ({"MarketType": "capacity-block"} if block else None)
    target = data.get("CapacityReservationSpecification", {}).get("CapacityReservationTarget", {})
    assert ("CapacityReservationId" in target) is reserved
    assert group["capacityType"] == {"capacity-block": "CAPACITY_BLOCK", "spot": "SPOT"}.get(capacity, "ON_DEMAND")
    assert len(group["subnets"]) == 1  # the one zone of the pool (the reservation's)
    assert ("Placement" in data) is (not reserved and bool(data.get("NetworkInterfaces")))


@pytest.mark.parametrize(("instance_type", "capacity"), CASES)
def test_efa_interfaces_label_and_worker_requests_agree(instance_type, capacity):
    template, group, dgd, _ = planned(instance_type, capacity)
    instance = CATALOG.instance_types[instance_type]
    interfaces = template["LaunchTemplateData"]["NetworkInterfaces"]
    assert all("SubnetId" not in nic for nic in interfaces)
    efa_only = sum(nic["InterfaceType"] == "efa-only" for nic in interfaces)
    assert efa_only == instance.efaInterfaces == int(group["labels"][EFA_PER_GPU_LABEL]) * instance.gpus
    workers = [c for c in dgd["spec"]["components"] if c["type"] in ("prefill", "decode")]
    for worker in workers:
        for container in worker["podTemplate"]["spec"]["containers"]:
            limits = container["resources"]["limits"]
            assert int(limits[EFA_RESOURCE]) == efa_only // instance.gpus * int(limits[GPU_RESOURCE])
            assert container["resources"]["requests"][EFA_RESOURCE] == limits[EFA_RESOURCE]


@pytest.mark.parametrize(("instance_type", "capacity"), CASES)
def test_imdsv2_hop_limit_one_and_the_fabric_group_open_both_ways(instance_type, capacity):
    template, _, _, run = planned(instance_type, capacity)
    assert template["LaunchTemplateData"]["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpTokens": "required",
        "HttpPutResponseHopLimit": 1,
    }
    (group,) = run.of_type("aws:ec2/securityGroup:SecurityGroup")
    group_id = f"{group.name}-id"
    for rule_type in (INGRESS, EGRESS):
        (rule,) = inputs(run, rule_type)
        assert rule["securityGroupId"] == rule["referencedSecurityGroupId"] == group_id
        assert rule["ipProtocol"] == "-1"


def test_the_checks_can_fail():
    """What botocore and the model's enums reject, and what the translation refuses to guess."""
    template, group, _, _ = planned(*CASES[0])
    assert problems("eks", "CreateNodegroup", {k: v for k, v in group.items() if k != "nodeRole"})
    assert problems("eks", "CreateNodegroup", {**group, "capacityType": "CAPACITY_BLOCKS"})
    bad_market = {
        **template,
        "LaunchTemplateData": {**template["LaunchTemplateData"], "InstanceMarketOptions": {"MarketType": "block"}},
    }
    assert problems("ec2", "CreateLaunchTemplate", bad_market)
    with pytest.raises(KeyError, match=r"\['SubnetIdd'\] are not members"):
        launch_template_request("t", {"networkInterfaces": [{"subnetIdd": "subnet-1"}]})
