"""The EKS cluster: control plane (pinned version, restricted endpoint, all control-plane logs, secrets
encrypted with a KMS key), the CPU system node group (its own launch template: IMDSv2, hop limit 1), the
core add-ons, and the Kubernetes provider every Kubernetes resource of the stack is created with (the one
place that builds it)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.iam import assume_role_policy
from components.kubeconfig import kubeconfig
from components.launch_templates import metadata_options, root_volume, tag_specifications
from serving_stack.facts.aws_platform import EksAddon
from serving_stack.names import ROLE_LABEL, TypeTokens

CONTROL_PLANE_LOGS = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
CLUSTER_POLICY = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"


@dataclass(frozen=True)
class SystemNodeGroupSpec:
    instance_types: Sequence[str]
    min_size: int
    desired_size: int
    max_size: int
    disk_size_gib: int


@dataclass(frozen=True)
class ClusterAccess:
    """An IAM principal with an EKS access policy, cluster-wide or in `namespaces`."""

    principal_arn: str
    policy: str
    namespaces: Sequence[str] = ()


ACCESS_POLICIES = {
    name: f"arn:aws:eks::aws:cluster-access-policy/AmazonEKS{name}Policy"
    for name in ("ClusterAdmin", "Admin", "Edit", "View")
}


@dataclass(frozen=True)
class EksClusterArgs:
    cluster_name: str  # the EKS cluster name
    kubernetes_version: str  # the control plane's Kubernetes minor, e.g. "1.33"
    region: str  # the cluster's region
    private_subnet_ids: Sequence[pulumi.Input[str]]  # where the control plane's interfaces and system nodes go
    endpoint_public_access_cidrs: Sequence[str]  # who may reach the public API endpoint
    log_retention_days: int  # how long the control-plane log group keeps logs
    system_nodes: SystemNodeGroupSpec  # the non-GPU node group for the system pods
    addons: Sequence[EksAddon]  # the EKS add-ons, pinned
    node_managed_policies: Sequence[str]  # managed policies attached to the node role
    access_entries: Sequence[ClusterAccess] = ()  # principals besides the creator and their access policies
    tags: Mapping[str, str] = field(default_factory=dict)  # tags on every AWS resource it creates


class EksCluster(pulumi.ComponentResource):
    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, args: EksClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.EKS_CLUSTER, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)
        role = aws.iam.Role(
            f"{name}-cluster-role", assume_role_policy=assume_role_policy("eks.amazonaws.com"), tags=tags, opts=child
        )
        role_policy = aws.iam.RolePolicyAttachment(
            f"{name}-cluster-policy", role=role.name, policy_arn=CLUSTER_POLICY, opts=child
        )
        key = aws.kms.Key(
            f"{name}-secrets-key",
            description=f"EKS secrets envelope encryption for {args.cluster_name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=tags,
            opts=child,
        )
        logs = aws.cloudwatch.LogGroup(
            f"{name}-control-plane-logs",
            name=f"/aws/eks/{args.cluster_name}/cluster",
            retention_in_days=args.log_retention_days,
            tags=tags,
            # EKS writes to exactly this name, so a replacement cannot take a new one: delete first.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        public = bool(args.endpoint_public_access_cidrs)
        cluster = aws.eks.Cluster(
            f"{name}-cluster",
            name=args.cluster_name,
            version=args.kubernetes_version,
            role_arn=role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=list(args.private_subnet_ids),
                endpoint_private_access=True,
                endpoint_public_access=public,
                public_access_cidrs=list(args.endpoint_public_access_cidrs) if public else None,
            ),
            enabled_cluster_log_types=CONTROL_PLANE_LOGS,
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key.arn), resources=["secrets"]
            ),
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API", bootstrap_cluster_creator_admin_permissions=True
            ),
            # A pinned version past its standard support must fail loudly, not bill extended support.
            upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type="STANDARD"),
            tags=tags,
            # The log group must exist first or EKS creates it without retention; the role needs its
            # policy before EKS can manage the cluster's network interfaces.
            # The name is the cluster's identity (kubeconfig, node groups, add-ons): a change that replaces the
            # cluster (its role, name or network family) replaces everything on it, deleting first.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[logs, role_policy], delete_before_replace=True),
        )
        node_role = aws.iam.Role(
            f"{name}-system-node-role",
            assume_role_policy=assume_role_policy("ec2.amazonaws.com"),
            tags=tags,
            opts=child,
        )
        node_policies = [
            aws.iam.RolePolicyAttachment(
                f"{name}-system-node-{arn.rsplit('/', 1)[-1]}", role=node_role.name, policy_arn=arn, opts=child
            )
            for arn in args.node_managed_policies
        ]
        early_addons = [self._addon(name, cluster, addon, []) for addon in args.addons if not addon.needsNodes]
        system = args.system_nodes
        template = aws.ec2.LaunchTemplate(
            f"{name}-system-launch-template",
            description=f"System nodes of {args.cluster_name}: IMDSv2 only, metadata hop limit 1",
            metadata_options=metadata_options(),
            block_device_mappings=[root_volume(system.disk_size_gib)],
            tag_specifications=tag_specifications(tags, f"{args.cluster_name}-system-node"),
            update_default_version=True,
            tags=tags,
            opts=child,
        )
        nodes = aws.eks.NodeGroup(
            f"{name}-system-nodes",
            cluster_name=cluster.name,
            # A generated name: a replacement (instance types, disk) starts the new group before the old goes.
            node_group_name_prefix=f"{args.cluster_name}-system-",
            node_role_arn=node_role.arn,
            subnet_ids=list(args.private_subnet_ids),
            instance_types=list(system.instance_types),
            ami_type="AL2023_x86_64_STANDARD",
            version=args.kubernetes_version,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=system.min_size, desired_size=system.desired_size, max_size=system.max_size
            ),
            # The root volume lives on the template (EKS rejects diskSize beside a launch template).
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            labels={ROLE_LABEL: "system"},
            tags=tags,
            # Nodes join only with their role's policies attached and the CNI add-on in place.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*node_policies, *early_addons]),
        )
        late_addons = [self._addon(name, cluster, addon, [nodes]) for addon in args.addons if addon.needsNodes]
        for index, entry in enumerate(args.access_entries):
            self._access_entry(f"{name}-access-{index}", cluster, entry)
        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.cluster_security_group_id = cluster.vpc_config.cluster_security_group_id
        self.kubeconfig = pulumi.Output.secret(
            kubeconfig(args.cluster_name, args.region, cluster.endpoint, cluster.certificate_authority.data)
        )
        self.provider = k8s.Provider(
            f"{name}-kubernetes",
            kubeconfig=self.kubeconfig,
            # Workloads need somewhere to run: every Kubernetes resource waits for the system nodes.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[nodes, *late_addons]),
        )
        self.register_outputs(
            {"clusterName": self.cluster_name, "endpoint": self.endpoint, "kubeconfig": self.kubeconfig}
        )

    def _access_entry(self, name: str, cluster: aws.eks.Cluster, access: ClusterAccess) -> None:
        """Without one, only the identity that created the cluster may run the next `up` (API auth mode)."""
        # One entry (and one association per policy) per principal: a replacement must delete the old first.
        replace_in_place = pulumi.ResourceOptions(parent=self, delete_before_replace=True)
        entry = aws.eks.AccessEntry(
            name, cluster_name=cluster.name, principal_arn=access.principal_arn, type="STANDARD", opts=replace_in_place
        )
        scope = aws.eks.AccessPolicyAssociationAccessScopeArgs(
            type="namespace" if access.namespaces else "cluster", namespaces=list(access.namespaces) or None
        )
        aws.eks.AccessPolicyAssociation(
            f"{name}-policy",
            cluster_name=cluster.name,
            principal_arn=entry.principal_arn,
            policy_arn=ACCESS_POLICIES[access.policy],
            access_scope=scope,
            opts=replace_in_place,
        )

    def _addon(
        self, name: str, cluster: aws.eks.Cluster, addon: EksAddon, depends_on: list[pulumi.Resource]
    ) -> aws.eks.Addon:
        return aws.eks.Addon(
            f"{name}-addon-{addon.name}",
            cluster_name=cluster.name,
            addon_name=addon.name,
            addon_version=addon.version,
            configuration_values=json.dumps(addon.configuration, sort_keys=True) if addon.configuration else None,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="PRESERVE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on),
        )
