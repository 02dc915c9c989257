"""A GPU pool's node group and launch template: one AZ with a cluster placement group, a security group
open to itself, IMDSv2, the GPU taint and the label contract, NVMe RAID0 through nodeadm, a minimal node
role, the node group's Kubernetes version, and Capacity Block and ODCR wiring."""

from __future__ import annotations

import base64
import email

import yaml
from aws_helpers import KUBERNETES_VERSION, capacity_fields, pool_zone, resolved, run_gpu_pool, the

SUBNET = "subnet-0aaaaaaaaaaaaaaaa"
RESERVATION = "cr-0123456789abcdef0"
NODE_GROUP, TEMPLATE = "aws:eks/nodeGroup:NodeGroup", "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT = "aws:ec2/placementGroup:PlacementGroup"


def build_pool(instance_type: str, **fields):
    return run_gpu_pool(resolved(instance_type, **fields), subnet_id=SUBNET)


def test_placement_group_is_cluster_in_the_pool_az():
    run = build_pool("p5en.48xlarge", availabilityZone="us-east-1b")
    group = the(run, PLACEMENT)
    assert group["strategy"] == "cluster"
    assert group["tags"]["nemotron.nvidia.com/availability-zone"] == "us-east-1b"
    assert the(run, TEMPLATE)["placement"] == {"groupName": "gpu-placement"}
    # The AZ is explicit through the node group's only subnet: the pool AZ's private subnet.
    assert the(run, NODE_GROUP)["subnetIds"] == [SUBNET]


def test_security_group_allows_all_traffic_to_and_from_itself():
    run = build_pool("p5.48xlarge")
    ingress = the(run, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    egress = the(run, "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    for rule in (ingress, egress):
        assert rule["ipProtocol"] == "-1"
        assert rule["securityGroupId"] == rule["referencedSecurityGroupId"] == "gpu-fabric-sg-id"


def test_imdsv2_required_and_hop_limit_one():
    metadata = the(build_pool("p6-b200.48xlarge"), TEMPLATE)["metadataOptions"]
    assert metadata == {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1}


def test_taint_labels_ami_and_capacity_type():
    node_group = the(
        build_pool("p5en.48xlarge", gpuProduct="NVIDIA-H200-SXM", minSize=1, desiredSize=2, maxSize=4), NODE_GROUP
    )
    assert node_group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    assert node_group["labels"] == {
        "nemotron.nvidia.com/pool": "pool",
        "nemotron.nvidia.com/fabric": "efa",
        "nemotron.nvidia.com/efa-per-gpu": "2",
        "nemotron.nvidia.com/gpu": "h200",
    }
    assert (node_group["amiType"], node_group["capacityType"], node_group["instanceTypes"]) == (
        "AL2023_x86_64_NVIDIA",
        "ON_DEMAND",
        ["p5en.48xlarge"],
    )
    assert node_group["scalingConfig"] == {"minSize": 1, "desiredSize": 2, "maxSize": 4}
    assert node_group["launchTemplate"] == {"id": "gpu-launch-template-id", "version": "1"}
    assert node_group["version"] == KUBERNETES_VERSION  # the cluster's: a version change upgrades the group


def test_nvme_raid0_through_the_nodeadm_node_config():
    user_data = the(build_pool("p5.48xlarge"), TEMPLATE)["userData"]
    message = email.message_from_string(base64.b64decode(user_data).decode())
    assert message.is_multipart()
    (part,) = message.get_payload()
    assert part.get_content_type() == "application/node.eks.aws"
    node_config = yaml.safe_load(part.get_payload())
    assert (node_config["apiVersion"], node_config["kind"]) == ("node.eks.aws/v1alpha1", "NodeConfig")
    assert node_config["spec"]["instance"]["localStorage"]["strategy"] == "RAID0"


def test_node_role_has_only_the_worker_policies():
    run = build_pool("p5.4xlarge")
    attached = sorted(r.inputs["policyArn"] for r in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment"))
    assert attached == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    ]
    assert "ec2.amazonaws.com" in the(run, "aws:iam/role:Role")["assumeRolePolicy"]
    policies = {
        f"aws:iam/rolePolicyAttachment:RolePolicyAttachment::gpu-node-{arn.rsplit('/', 1)[1]}" for arn in attached
    }
    assert policies <= set(run.named("gpu-node-group").depends_on)


def test_capacity_block_wiring():
    """EKS: a Capacity Block group has its instance type on the launch template and none on the node group."""
    gb200 = "p6e-gb200.36xlarge"
    run = build_pool(gb200, availabilityZone=pool_zone(gb200), **capacity_fields(gb200, "capacity-block"))
    template = the(run, TEMPLATE)
    assert template["instanceType"] == gb200
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": RESERVATION}
    }
    node_group = the(run, NODE_GROUP)
    assert "instanceTypes" not in node_group
    assert node_group["capacityType"] == "CAPACITY_BLOCK"
    assert node_group["subnetIds"] == [SUBNET]
    assert node_group["amiType"] == "AL2023_ARM_64_NVIDIA"
    # A Capacity Block is placed by its reservation: no placement group of our own; replaced delete-first.
    assert run.of_type(PLACEMENT) == []
    assert "placement" not in template
    assert run.named("gpu-node-group").to_json()["deleteBeforeReplace"] is True


def test_odcr_wiring():
    """An On-Demand Capacity Reservation: targeted by the template, market left on-demand, instance types on
    the node group, no placement group (the reservation decides where), replaced delete-first."""
    run = build_pool("p5en.48xlarge", **capacity_fields("p5en.48xlarge", "odcr"))
    template = the(run, TEMPLATE)
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": RESERVATION}
    }
    assert "instanceMarketOptions" not in template
    assert "instanceType" not in template
    assert "placement" not in template
    node_group = the(run, NODE_GROUP)
    assert (node_group["capacityType"], node_group["instanceTypes"]) == ("ON_DEMAND", ["p5en.48xlarge"])
    assert run.of_type(PLACEMENT) == []
    assert run.named("gpu-node-group").to_json()["deleteBeforeReplace"] is True


def test_spot_pool():
    run = build_pool("p5.4xlarge", capacityType="spot")
    assert the(run, NODE_GROUP)["capacityType"] == "SPOT"
    template = the(run, TEMPLATE)
    assert "instanceMarketOptions" not in template
    assert "capacityReservationSpecification" not in template


def test_root_volume_is_encrypted_gp3():
    (mapping,) = the(build_pool("p5.48xlarge", rootVolumeGiB=300), TEMPLATE)["blockDeviceMappings"]
    assert mapping == {
        "deviceName": "/dev/xvda",
        "ebs": {"volumeSize": 300, "volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true"},
    }
