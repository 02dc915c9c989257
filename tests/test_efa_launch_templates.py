"""Every GPU instance type gets the EFA network interfaces AWS documents for it in its launch template:
card 0 device 0 an ENA `interface`, `efa-only` on card 0 device 1 and device 0 of every other card, and for
p6e-gb200 one `efa-only` per GPU pair of cards (1, 5, 9, 13: EC2 User Guide, EFA for P6e-GB200), every
interface in the pool's security groups, never a SubnetId."""

from __future__ import annotations

import pytest
from aws_helpers import inputs, resolved, run_gpu_pool, the

from serving_stack.facts.aws import load_aws_catalog

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
CLUSTER_SG = "sg-0123456789abcdef0"
POOL_SG = "pool-fabric-sg-id"  # `resolved()` names the pool "pool"; mock ids are "<resource>-id"

# Written out from the EFA user guide (not derived from the code under test).
NETWORK_CARDS = {"p5.48xlarge": 32, "p5.4xlarge": 1, "p5e.48xlarge": 32, "p5en.48xlarge": 16, "p6-b200.48xlarge": 8}
GB200_LAYOUT = [(0, 0, "interface")] + [(card, 0, "efa-only") for card in (1, 5, 9, 13)]


def expected_layout(instance_type: str) -> list[tuple[int, int, str]]:
    if instance_type == "p6e-gb200.36xlarge":
        return GB200_LAYOUT
    cards = NETWORK_CARDS[instance_type]
    return [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, cards)]


def launch_template_of(instance_type: str) -> dict:
    pool = resolved(instance_type)
    return the(run_gpu_pool(pool, pool.name, cluster_security_group_ids=[CLUSTER_SG]), LAUNCH_TEMPLATE)


def test_every_catalog_instance_type_is_covered():
    assert set(load_aws_catalog().instance_types) == {*NETWORK_CARDS, "p6e-gb200.36xlarge"}


@pytest.mark.parametrize("instance_type", sorted(load_aws_catalog().instance_types))
def test_efa_interface_layout(instance_type):
    template = launch_template_of(instance_type)
    interfaces = template["networkInterfaces"]
    layout = [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces]
    assert layout == expected_layout(instance_type)
    efa_only = sum(kind == "efa-only" for _, _, kind in layout)
    assert efa_only == load_aws_catalog().instance_types[instance_type].efaInterfaces
    for interface in interfaces:
        assert "subnetId" not in interface
        assert interface["securityGroups"] == [CLUSTER_SG, POOL_SG]
        assert interface["deleteOnTermination"] == "true"
    # Security groups on interfaces conflict with template-level ones.
    assert "vpcSecurityGroupIds" not in template


def test_p5_48xlarge_exposes_32_efa_devices_p5en_16_b200_8_and_gb200_4():
    for instance_type, devices in {
        "p5.48xlarge": 32,
        "p5en.48xlarge": 16,
        "p6-b200.48xlarge": 8,
        "p6e-gb200.36xlarge": 4,
    }.items():
        assert (
            sum(i["interfaceType"] == "efa-only" for i in launch_template_of(instance_type)["networkInterfaces"])
            == devices
        )


def test_a_pool_without_fabric_gets_no_efa_interfaces():
    pool = resolved("p5.4xlarge", fabric="none")
    run = run_gpu_pool(pool, "plain", cluster_security_group_ids=[CLUSTER_SG])
    (template,) = inputs(run, LAUNCH_TEMPLATE)
    assert "networkInterfaces" not in template
    assert template["vpcSecurityGroupIds"] == [CLUSTER_SG]  # no fabric: no EFA security group
    assert not inputs(run, "aws:ec2/securityGroup:SecurityGroup")
    assert not inputs(run, "aws:ec2/placementGroup:PlacementGroup")
    (node_group,) = inputs(run, "aws:eks/nodeGroup:NodeGroup")
    assert node_group["labels"]["nemotron.nvidia.com/fabric"] == "none"
    assert "nemotron.nvidia.com/efa-per-gpu" not in node_group["labels"]
