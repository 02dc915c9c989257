"""Launch-template settings every node group of the stack shares (GPU pools and system nodes): EKS's
default template would leave IMDSv1 on and the metadata hop limit at 2, so pods could reach the node role."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi_aws as aws

TAGGED_RESOURCES = ("instance", "volume", "network-interface")


def metadata_options() -> aws.ec2.LaunchTemplateMetadataOptionsArgs:
    """IMDSv2 only, hop limit 1: pods (one hop further) cannot read the node's credentials. The node daemons
    that use IMDS (VPC CNI, EFA and CSI node plugins) run on the host network; workloads use Pod Identity."""
    return aws.ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1
    )


def root_volume(size_gib: int, device_name: str = "/dev/xvda") -> aws.ec2.LaunchTemplateBlockDeviceMappingArgs:
    """The AL2023 root volume: encrypted gp3 (with a launch template the node group's diskSize is not allowed)."""
    return aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
        device_name=device_name,
        ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
            volume_size=size_gib, volume_type="gp3", encrypted="true", delete_on_termination="true"
        ),
    )


def tag_specifications(tags: Mapping[str, str], name: str) -> list[aws.ec2.LaunchTemplateTagSpecificationArgs]:
    """The group's tags on its instances, volumes and network interfaces (cost allocation, ownership)."""
    named = {**tags, "Name": name}
    return [aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=named) for kind in TAGGED_RESOURCES]
