"""One GPU node pool: an EKS managed node group with its own launch template (EFA interfaces laid out as
AWS documents for the instance type, IMDSv2 with hop limit 1, NVMe RAID0, the fastest image delivery of its AMI
type or an image-cache volume (components/launch_templates.py), the reservation it launches into: a Capacity
Block or an ODCR), a cluster placement group, a security group for EFA traffic, and a node role with only the
worker policies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_aws as aws

from components.iam import node_role
from components.launch_templates import image_cache_volume, metadata_options, root_volume, tag_specifications, user_data
from serving_stack.names import AVAILABILITY_ZONE_TAG, GPU_TAINT, POOL_LABEL, TypeTokens
from serving_stack.plan.autoscaling import CA_TAG_PREFIX
from serving_stack.plan.pools import ResolvedPool


@dataclass(frozen=True)
class GpuNodePoolArgs:
    pool: ResolvedPool  # a managed pool as planned, with its switches (efa, placement_group, ...)
    cluster_name: pulumi.Input[str]  # the EKS cluster the node group joins
    vpc_id: pulumi.Input[str]  # the VPC of its EFA security group
    subnet_id: pulumi.Input[str]  # the one subnet (zone) the pool launches into
    cluster_security_group_ids: Sequence[pulumi.Input[str]]  # the cluster's node security groups
    node_managed_policies: Sequence[str]  # managed policies attached to the node role
    tags: Mapping[str, str] = field(default_factory=dict)  # tags on every AWS resource it creates
    # cluster-autoscaler discovery and scale-from-zero hints, as tags on the node group's Auto Scaling group
    # (EKS does not copy node group tags there): `serving_stack.plan.autoscaling.node_group_autoscaler_tags`.
    tag_for_cluster_autoscaler: bool = False
    cluster_autoscaler_tags: Mapping[str, str] = field(default_factory=dict)  # the tags themselves (required then)


class GpuNodePool(pulumi.ComponentResource):
    """Nodes carry the pool's label contract and the GPU taint. The pool lives in one zone: the node group gets only
    that zone's subnet (a launch template may not name one). A Capacity Block group has its instance type on the
    launch template and none on the node group (EKS rejects it otherwise)."""

    node_group: aws.eks.NodeGroup

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.GPU_NODE_POOL, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pool = args.pool
        if not (pool.managed and pool.instance_type and pool.ami_type and pool.availability_zone):
            raise ValueError(f"pool {pool.name!r} is not a managed pool with an instance type and an AZ")
        tags = {**args.tags, POOL_LABEL: pool.name}
        role, policies = node_role(f"{name}-node", args.node_managed_policies, tags, self)
        security_groups: list[pulumi.Input[str]] = list(args.cluster_security_group_ids)
        reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs
        if pool.efa:
            security_groups.append(self._fabric_security_group(name, pool, args.vpc_id, tags))
        placement = None
        if pool.placement_group:
            group = aws.ec2.PlacementGroup(
                f"{name}-placement",
                strategy="cluster",
                tags={**tags, AVAILABILITY_ZONE_TAG: pool.availability_zone},
                opts=child,
            )
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=group.name)
        template = aws.ec2.LaunchTemplate(
            f"{name}-launch-template",
            description=f"GPU pool {pool.name}: {pool.instance_type} in {pool.availability_zone}",
            instance_type=pool.instance_type if pool.instance_type_on_launch_template else None,
            network_interfaces=[
                aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                    network_card_index=nic.networkCardIndex,
                    device_index=nic.deviceIndex,
                    interface_type=nic.interfaceType,
                    security_groups=security_groups,
                    delete_on_termination="true",
                )
                for nic in pool.efa_layout
            ]
            if pool.efa
            else None,
            vpc_security_group_ids=None if pool.efa else security_groups,
            placement=placement,
            metadata_options=metadata_options(),
            block_device_mappings=[
                root_volume(pool.root_volume_gib, image_io=pool.fast_image_pull and not pool.nvme_raid0),
                *([image_cache_volume(pool.image_cache_snapshot_id)] if pool.image_cache_snapshot_id else []),
            ],
            user_data=user_data(pool.nvme_raid0, pool.fast_image_pull, pool.image_cache_snapshot_id is not None),
            instance_market_options=(
                aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type=pool.market_type)
                if pool.market_type
                else None
            ),
            capacity_reservation_specification=aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=reservation(capacity_reservation_id=pool.capacity_reservation_id)
            )
            if pool.capacity_reservation_id
            else None,
            tag_specifications=tag_specifications(tags, f"{pool.name}-gpu-node"),
            update_default_version=True,
            tags=tags,
            opts=child,
        )
        self.node_group = aws.eks.NodeGroup(
            f"{name}-node-group",
            cluster_name=args.cluster_name,
            # A generated name, so a replacement never collides with the group it replaces.
            node_group_name_prefix=f"{pool.name}-",
            node_role_arn=role.arn,
            subnet_ids=[args.subnet_id],
            instance_types=None if pool.instance_type_on_launch_template else [pool.instance_type],
            ami_type=pool.ami_type,
            capacity_type=pool.eks_capacity_type,
            version=pool.kubernetes_version,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=pool.min_size, desired_size=pool.desired_size, max_size=pool.max_size
            ),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            labels=pool.node_labels,
            taints=[aws.eks.NodeGroupTaintArgs(key=GPU_TAINT["key"], value=GPU_TAINT["value"], effect="NO_SCHEDULE")],
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            tags=tags,
            # Nodes join only once their role can register them and pull images.
            # A reservation (Capacity Block, ODCR) cannot hold old and new nodes at once: delete first.
            opts=pulumi.ResourceOptions(parent=self, depends_on=policies, delete_before_replace=pool.reserved_capacity),
        )
        if args.tag_for_cluster_autoscaler:
            self._tag_auto_scaling_group(name, args.cluster_autoscaler_tags)
        self.register_outputs({"nodeGroupName": self.node_group.node_group_name})

    def _tag_auto_scaling_group(self, name: str, tags: Mapping[str, str]) -> None:
        if not tags:
            raise ValueError(f"GPU pool {name}: tag_for_cluster_autoscaler without cluster_autoscaler_tags")
        group_name = self.node_group.resources.apply(lambda resources: resources[0].autoscaling_groups[0].name)
        for key, value in sorted(tags.items()):
            aws.autoscaling.Tag(
                f"{name}-asg-tag-{key.removeprefix(CA_TAG_PREFIX + '/').replace('/', '_')}",
                autoscaling_group_name=group_name,
                tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                opts=pulumi.ResourceOptions(parent=self),
            )

    def _fabric_security_group(
        self, name: str, pool: ResolvedPool, vpc_id: pulumi.Input[str], tags: Mapping[str, str]
    ) -> pulumi.Output[str]:
        """EFA traffic: all traffic to and from the group itself (what the EFA user guide requires)."""
        child = pulumi.ResourceOptions(parent=self)
        group = aws.ec2.SecurityGroup(
            f"{name}-fabric-sg",
            vpc_id=vpc_id,
            description=f"EFA traffic between the nodes of GPU pool {pool.name}: all traffic to and from itself",
            tags={**tags, "Name": f"{pool.name}-fabric"},
            opts=child,
        )
        itself = {"security_group_id": group.id, "referenced_security_group_id": group.id, "ip_protocol": "-1"}
        aws.vpc.SecurityGroupIngressRule(f"{name}-fabric-from-self", **itself, opts=child)
        aws.vpc.SecurityGroupEgressRule(f"{name}-fabric-to-self", **itself, opts=child)
        group_id: pulumi.Output[str] = group.id
        return group_id
