"""The cluster every Kubernetes resource of the stack goes to: created (`Network` + `EksCluster`) or reached through
an existing cluster's explicit kubeconfig (`cluster_handles`). The network gives Local Zone GPU pools (P6e-GB200 in
Dallas) their own private subnets, kept apart: the control plane, mount targets and load balancers get AZ subnets.
`EksCluster` builds the one Kubernetes provider, from a kubeconfig rendered from the cluster's outputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.iam import assume_role_policy, node_role
from components.launch_templates import metadata_options, root_volume, tag_specifications
from serving_stack.facts.aws import EksAddon
from serving_stack.names import ROLE_LABEL, TypeTokens
from serving_stack.plan.cluster import CreatedCluster, local_zone_cidrs, subnet_cidrs
from serving_stack.plan.stack import StackPlan


@dataclass(frozen=True)
class NetworkArgs:
    """The plan's cluster (its name tags the subnets; its CIDR, zones, NAT layout and Local Zone subnets shape the
    VPC) and the Region."""

    cluster: CreatedCluster
    region: str
    tags: Mapping[str, str] = field(default_factory=dict)  # tags on every AWS resource it creates


class Network(pulumi.ComponentResource):
    """`private_subnet_ids_by_az`: the AZ subnets (control plane, system nodes, mount targets, AZ pools);
    `local_zone_subnet_ids`: pool name -> the subnet of that Local Zone pool."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: list[pulumi.Output[str]]
    private_subnet_ids_by_az: dict[str, pulumi.Output[str]]
    local_zone_subnet_ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.NETWORK, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags, cluster, create = dict(args.tags), args.cluster, args.cluster.create
        cluster_tag = {f"kubernetes.io/cluster/{create.name}": "shared"}
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=create.vpcCidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**tags, "Name": f"{create.name}-vpc"},
            opts=child,
        )
        gateway = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=tags, opts=child)
        public_routes = aws.ec2.RouteTable(
            f"{name}-public-routes",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
            tags={**tags, "Name": f"{create.name}-public"},
            opts=child,
        )
        private_cidrs, public_cidrs = subnet_cidrs(create.vpcCidr, len(create.availabilityZones))
        nat_ids: list[pulumi.Output[str]] = []
        route_tables: list[aws.ec2.RouteTable] = []
        self.private_subnet_ids_by_az, self.local_zone_subnet_ids = {}, {}

        def subnet(resource: str, zone: str, cidr: str, label: str, role: Optional[str]) -> aws.ec2.Subnet:
            subnet_tags = {**tags, **cluster_tag, "Name": label, **({role: "1"} if role else {})}
            return aws.ec2.Subnet(
                resource, vpc_id=vpc.id, cidr_block=cidr, availability_zone=zone, tags=subnet_tags, opts=child
            )

        def private_subnet(
            kind: str, key: str, zone: str, cidr: str, label: str, role: Optional[str], nat_id: pulumi.Output[str]
        ) -> pulumi.Output[str]:
            """A subnet whose default route is a NAT gateway."""
            private = subnet(f"{name}-{kind}-{key}", zone, cidr, label, role)
            routes = aws.ec2.RouteTable(
                f"{name}-{kind}-routes-{key}",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat_id)],
                tags={**tags, "Name": label},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-{kind}-{key}", subnet_id=private.id, route_table_id=routes.id, opts=child
            )
            route_tables.append(routes)
            subnet_id: pulumi.Output[str] = private.id
            return subnet_id

        for index, zone in enumerate(create.availabilityZones):
            label = f"{create.name}-public-{zone}"
            public = subnet(f"{name}-public-{zone}", zone, public_cidrs[index], label, "kubernetes.io/role/elb")
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{zone}", subnet_id=public.id, route_table_id=public_routes.id, opts=child
            )
            if create.natGatewayPerAz or index == 0:
                address = aws.ec2.Eip(f"{name}-nat-{zone}", domain="vpc", tags=tags, opts=child)
                nat = aws.ec2.NatGateway(
                    f"{name}-nat-{zone}",
                    allocation_id=address.id,
                    subnet_id=public.id,
                    tags=tags,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway]),
                )
                nat_ids.append(nat.id)
            label, role = f"{create.name}-private-{zone}", "kubernetes.io/role/internal-elb"
            cidr = private_cidrs[index]
            self.private_subnet_ids_by_az[zone] = private_subnet("private", zone, zone, cidr, label, role, nat_ids[-1])
        # A private subnet per Local Zone pool (its zone group opted in first), egress through the first AZ's NAT
        # gateway; no load-balancer role tags: nothing is exposed from it.
        cidrs = local_zone_cidrs(create.vpcCidr, len(cluster.local_zone_subnets))
        for local, cidr in zip(cluster.local_zone_subnets, cidrs, strict=True):
            label = f"{create.name}-{local.pool}-{local.zone}"
            self.local_zone_subnet_ids[local.pool] = private_subnet(
                "local", local.pool, local.zone, cidr, label, None, nat_ids[0]
            )
        # Every private route table, the Local Zone ones too: a GB200 node's S3 downloads (model artifacts,
        # images' layers from ECR) then skip the NAT in the first AZ instead of crossing to it.
        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[t.id for t in route_tables],
            tags={**tags, "Name": f"{create.name}-s3"},
            opts=child,
        )
        self.vpc_id = vpc.id
        self.private_subnet_ids = list(self.private_subnet_ids_by_az.values())
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "localZoneSubnetIds": self.local_zone_subnet_ids,
            }
        )


def kubeconfig(
    cluster_name: str, region: str, endpoint: pulumi.Input[str], ca_data: pulumi.Input[str]
) -> pulumi.Output[str]:
    """A kubeconfig that authenticates with `aws eks get-token` (no static credentials in state)."""
    token = ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"]
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "args": token}}
    return pulumi.Output.json_dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}
            ],
            "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
            "current-context": cluster_name,
            "users": [{"name": cluster_name, "user": user}],
        }
    )


CONTROL_PLANE_LOGS = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
CLUSTER_POLICY = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"


ACCESS_POLICIES = {
    name: f"arn:aws:eks::aws:cluster-access-policy/AmazonEKS{name}Policy"
    for name in ("ClusterAdmin", "Admin", "Edit", "View")
}


@dataclass(frozen=True)
class EksClusterArgs:
    """The plan's cluster (name, version, endpoint access, log retention, system nodes, add-ons, access grants) and
    what the network and the account add."""

    cluster: CreatedCluster
    region: str  # the cluster's region
    private_subnet_ids: Sequence[pulumi.Input[str]]  # where the control plane's interfaces and system nodes go
    node_managed_policies: Sequence[str]  # managed policies attached to the node role
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
        tags, spec, create = dict(args.tags), args.cluster, args.cluster.create
        role = aws.iam.Role(
            f"{name}-cluster-role", assume_role_policy=assume_role_policy("eks.amazonaws.com"), tags=tags, opts=child
        )
        role_policy = aws.iam.RolePolicyAttachment(
            f"{name}-cluster-policy", role=role.name, policy_arn=CLUSTER_POLICY, opts=child
        )
        key = aws.kms.Key(
            f"{name}-secrets-key",
            description=f"EKS secrets envelope encryption for {create.name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=tags,
            opts=child,
        )
        logs = aws.cloudwatch.LogGroup(
            f"{name}-control-plane-logs",
            name=f"/aws/eks/{create.name}/cluster",
            retention_in_days=create.controlPlaneLogRetentionDays,
            tags=tags,
            # EKS writes to exactly this name, so a replacement cannot take a new one: delete first.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        public = bool(create.endpointPublicAccessCidrs)
        cluster = aws.eks.Cluster(
            f"{name}-cluster",
            name=create.name,
            version=create.kubernetesVersion,
            role_arn=role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=list(args.private_subnet_ids),
                endpoint_private_access=True,
                endpoint_public_access=public,
                public_access_cidrs=create.endpointPublicAccessCidrs if public else None,
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
        system_role, node_policies = node_role(f"{name}-system-node", args.node_managed_policies, tags, self)
        early_addons = [self._addon(name, cluster, addon, []) for addon in spec.addons if not addon.needsNodes]
        system = spec.system_nodes
        template = aws.ec2.LaunchTemplate(
            f"{name}-system-launch-template",
            description=f"System nodes of {create.name}: IMDSv2 only, metadata hop limit 1",
            metadata_options=metadata_options(),
            block_device_mappings=[root_volume(system.diskSizeGiB)],
            tag_specifications=tag_specifications(tags, f"{create.name}-system-node"),
            update_default_version=True,
            tags=tags,
            opts=child,
        )
        nodes = aws.eks.NodeGroup(
            f"{name}-system-nodes",
            cluster_name=cluster.name,
            # A generated name: a replacement (instance types, disk) starts the new group before the old goes.
            node_group_name_prefix=f"{create.name}-system-",
            node_role_arn=system_role.arn,
            subnet_ids=list(args.private_subnet_ids),
            instance_types=list(system.instanceTypes),
            ami_type="AL2023_x86_64_STANDARD",
            version=create.kubernetesVersion,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=system.minSize, desired_size=system.desiredSize, max_size=system.maxSize
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
        late_addons = [self._addon(name, cluster, addon, [nodes]) for addon in spec.addons if addon.needsNodes]
        self._access_entries(name, cluster, spec)
        self.cluster_name = cluster.name
        # What every node group waits for: the add-ons created before compute (the CNI among them), as
        # terraform-aws-eks orders `before_compute` add-ons before its node groups.
        self.node_prerequisites: list[pulumi.Resource] = list(early_addons)
        self.endpoint = cluster.endpoint
        self.cluster_security_group_id = cluster.vpc_config.cluster_security_group_id
        self.kubeconfig = pulumi.Output.secret(
            kubeconfig(create.name, args.region, cluster.endpoint, cluster.certificate_authority.data)
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

    def _access_entries(self, name: str, cluster: aws.eks.Cluster, spec: CreatedCluster) -> None:
        """Without one, only the identity that created the cluster may run the next `up` (API auth mode)."""
        # One entry (and one association per policy) per principal: a replacement must delete the old first.
        replace_in_place = pulumi.ResourceOptions(parent=self, delete_before_replace=True)
        for index, grant in enumerate(spec.create.accessEntries):
            entry = aws.eks.AccessEntry(
                f"{name}-access-{index}",
                cluster_name=cluster.name,
                principal_arn=grant.principalArn,
                type="STANDARD",
                opts=replace_in_place,
            )
            scope = aws.eks.AccessPolicyAssociationAccessScopeArgs(
                type="namespace" if grant.namespaces else "cluster", namespaces=grant.namespaces or None
            )
            aws.eks.AccessPolicyAssociation(
                f"{name}-access-{index}-policy",
                cluster_name=cluster.name,
                principal_arn=entry.principal_arn,
                policy_arn=ACCESS_POLICIES[grant.accessPolicy],
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


@dataclass(frozen=True)
class ClusterHandles:
    """What the rest of the stack needs from the cluster, whichever way it is reached."""

    kubernetes: k8s.Provider
    eks: Optional[EksCluster] = None
    name: Optional[pulumi.Input[str]] = None
    vpc_id: Optional[pulumi.Input[str]] = None
    vpc_cidr: Optional[str] = None
    subnets_by_az: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    local_zone_subnets: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    node_security_groups: Sequence[pulumi.Input[str]] = ()
    node_prerequisites: Sequence[pulumi.Resource] = ()  # what a node group of the stack waits for


def cluster_handles(plan: StackPlan, on_aws: pulumi.ResourceOptions) -> ClusterHandles:
    """The cluster the stack creates (VPC + EKS), or an existing one through an explicit kubeconfig."""
    cluster = plan.cluster
    if isinstance(cluster, CreatedCluster):
        assert plan.aws is not None
        network = Network("network", NetworkArgs(cluster, plan.aws.region), opts=on_aws)
        eks = EksCluster(
            "eks",
            EksClusterArgs(cluster, plan.aws.region, network.private_subnet_ids, plan.aws.node_managed_policies),
            opts=on_aws,
        )
        return ClusterHandles(
            kubernetes=eks.provider,
            eks=eks,
            name=eks.cluster_name,
            vpc_id=network.vpc_id,
            vpc_cidr=cluster.create.vpcCidr,
            subnets_by_az=network.private_subnet_ids_by_az,
            local_zone_subnets=network.local_zone_subnet_ids,
            node_security_groups=[eks.cluster_security_group_id],
            node_prerequisites=eks.node_prerequisites,
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
        vpc_id=existing.vpcId,
        subnets_by_az=existing.privateSubnetIds,
        node_security_groups=existing.nodeSecurityGroupIds,
    )
