"""The cluster every Kubernetes resource of the stack goes to: created (VPC + EKS) or reached (kubeconfig).

`cluster_handles` registers the `network` and `eks` components, or the explicit `kubernetes` provider of an
existing cluster, and returns what the rest of the stack needs from either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from components.eks_cluster import ClusterAccess, EksCluster, EksClusterArgs, SystemNodeGroupSpec
from components.network import Network, NetworkArgs
from serving_stack.plan.stack_plan_types import CreatedCluster, StackPlan


@dataclass(frozen=True)
class ClusterHandles:
    """What the rest of the stack needs from the cluster, whichever way it is reached."""

    kubernetes: k8s.Provider
    eks: Optional[EksCluster] = None
    network: Optional[Network] = None
    name: Optional[pulumi.Input[str]] = None
    vpc_id: Optional[pulumi.Input[str]] = None
    vpc_cidr: Optional[str] = None
    subnets_by_az: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    local_zone_subnets: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    node_security_groups: Sequence[pulumi.Input[str]] = ()


def cluster_handles(plan: StackPlan, on_aws: pulumi.ResourceOptions) -> ClusterHandles:
    """The cluster the stack creates (VPC + EKS), or an existing one through an explicit kubeconfig."""
    cluster = plan.cluster
    if isinstance(cluster, CreatedCluster):
        assert plan.aws is not None
        network = Network(
            "network",
            NetworkArgs(
                cluster_name=cluster.name,
                region=plan.aws.region,
                cidr=cluster.vpc_cidr,
                availability_zones=cluster.availability_zones,
                nat_gateway_per_az=cluster.nat_gateway_per_az,
                local_zone_subnets=cluster.local_zone_subnets,
            ),
            opts=on_aws,
        )
        system = cluster.system_nodes
        eks = EksCluster(
            "eks",
            EksClusterArgs(
                cluster_name=cluster.name,
                kubernetes_version=cluster.kubernetes_version,
                region=plan.aws.region,
                private_subnet_ids=network.private_subnet_ids,
                endpoint_public_access_cidrs=cluster.endpoint_public_access_cidrs,
                log_retention_days=cluster.log_retention_days,
                system_nodes=SystemNodeGroupSpec(
                    system.instance_types, system.min_size, system.desired_size, system.max_size, system.disk_size_gib
                ),
                addons=cluster.addons,
                node_managed_policies=plan.aws.node_managed_policies,
                access_entries=[ClusterAccess(g.principal_arn, g.policy, g.namespaces) for g in cluster.access_grants],
            ),
            opts=on_aws,
        )
        return ClusterHandles(
            kubernetes=eks.provider,
            eks=eks,
            network=network,
            name=eks.cluster_name,
            vpc_id=network.vpc_id,
            vpc_cidr=cluster.vpc_cidr,
            subnets_by_az=network.private_subnet_ids_by_az,
            local_zone_subnets=network.local_zone_subnet_ids,
            node_security_groups=[eks.cluster_security_group_id],
        )
    provider = k8s.Provider(
        "kubernetes", context=cluster.context, kubeconfig=cluster.kubeconfig_path, delete_unreachable=False
    )
    existing = cluster.eks
    if existing is None:
        return ClusterHandles(kubernetes=provider)
    return ClusterHandles(
        kubernetes=provider,
        name=existing.name,
        vpc_id=existing.vpc_id,
        subnets_by_az=existing.private_subnet_ids_by_az,
        node_security_groups=existing.node_security_group_ids,
    )
