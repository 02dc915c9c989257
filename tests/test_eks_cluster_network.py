"""Network and cluster: private subnets in every AZ behind NAT with an S3 gateway endpoint, a private subnet
per Local Zone pool that the control plane never gets, and an EKS cluster with a pinned version, a
restricted endpoint, all control-plane logs, KMS secrets encryption, a CPU system node group on its own
launch template (IMDSv2, hop limit 1), core add-ons, and the Kubernetes provider built from its kubeconfig."""

from __future__ import annotations

import ipaddress
import json

import pulumi
import pytest
from aws_helpers import inputs, run_components, the
from aws_requests import launch_template_request, node_group_request, problems

from components.cluster import EksCluster, EksClusterArgs, Network, NetworkArgs
from serving_stack.config.aws import CreateCluster, SystemNodeGroupConfig
from serving_stack.facts.aws import load_aws_catalog
from serving_stack.plan.cluster import CreatedCluster, local_zone_cidrs, subnet_cidrs
from serving_stack.plan.pools import MAX_LOCAL_ZONE_SUBNETS, LocalZoneSubnet

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
LOCAL_ZONE = load_aws_catalog().regions.local_zones("us-east-1")[0]
LOCAL_POOLS = [LocalZoneSubnet("ultra-a", LOCAL_ZONE), LocalZoneSubnet("ultra-b", LOCAL_ZONE)]


def build_stack(public_cidrs=("203.0.113.0/24",), nat_per_az=True):
    catalog = load_aws_catalog()
    create = CreateCluster(
        name="nemotron",
        kubernetesVersion="1.33",
        availabilityZones=ZONES,
        vpcCidr="10.0.0.0/16",
        natGatewayPerAz=nat_per_az,
        endpointPublicAccessCidrs=list(public_cidrs),
        controlPlaneLogRetentionDays=90,
    )
    system = SystemNodeGroupConfig(instanceTypes=["m7i.2xlarge"], minSize=2, desiredSize=2, maxSize=4, diskSizeGiB=100)
    spec = CreatedCluster(create, system, tuple(catalog.platform.eksAddons.cluster), tuple(LOCAL_POOLS))

    def build():
        network = Network("network", NetworkArgs(spec, "us-east-1"))
        cluster = EksCluster(
            "eks", EksClusterArgs(spec, "us-east-1", network.private_subnet_ids, catalog.platform.nodeManagedPolicies)
        )
        return {
            "kubeconfig": pulumi.Output.unsecret(cluster.kubeconfig),
            "endpoint": cluster.endpoint,
            "name": cluster.cluster_name,
        }

    return run_components(build)


@pytest.fixture(scope="module")
def stack():
    return build_stack()


def test_private_subnets_in_every_az_behind_nat(stack):
    private = {
        s["availabilityZone"]: s
        for s in inputs(stack, "aws:ec2/subnet:Subnet")
        if "internal-elb" in json.dumps(s["tags"])
    }
    assert sorted(private) == ZONES
    assert [private[z]["cidrBlock"] for z in ZONES] == ["10.0.0.0/18", "10.0.64.0/18", "10.0.128.0/18"]
    assert len(stack.of_type("aws:ec2/natGateway:NatGateway")) == 3
    private_routes = [t for t in inputs(stack, "aws:ec2/routeTable:RouteTable") if "-private-" in t["tags"]["Name"]]
    assert len(private_routes) == 3
    assert all(t["routes"][0]["cidrBlock"] == "0.0.0.0/0" for t in private_routes)


def test_one_nat_gateway_when_not_per_az():
    assert len(build_stack(nat_per_az=False).of_type("aws:ec2/natGateway:NatGateway")) == 1


def test_s3_gateway_endpoint_on_the_private_route_tables(stack):
    endpoint = the(stack, "aws:ec2/vpcEndpoint:VpcEndpoint")
    assert (endpoint["serviceName"], endpoint["vpcEndpointType"]) == ("com.amazonaws.us-east-1.s3", "Gateway")
    local = [t for t in stack.of_type("aws:ec2/routeTable:RouteTable") if t.name.startswith("network-local-routes-")]
    assert local, "the fixture has a Local Zone pool"
    # every private route table, the Local Zone pools' too (their S3 traffic then skips the NAT)
    assert endpoint["routeTableIds"] == [f"network-private-routes-{z}-id" for z in ZONES] + [
        f"{t.name}-id" for t in local
    ]


def test_subnet_plan_fits_the_vpc():
    private, public = subnet_cidrs("10.0.0.0/16", 2)
    assert private == ["10.0.0.0/18", "10.0.64.0/18"]
    assert public == ["10.0.192.0/22", "10.0.196.0/22"]
    local = [ipaddress.ip_network(c) for c in local_zone_cidrs("10.0.0.0/16", MAX_LOCAL_ZONE_SUBNETS)]
    private3, public3 = subnet_cidrs("10.0.0.0/16", 3)
    others = [ipaddress.ip_network(c) for c in [*private3, *public3]]
    assert len(set(local)) == MAX_LOCAL_ZONE_SUBNETS
    assert not any(a.overlaps(b) for a in local for b in others)
    with pytest.raises(ValueError, match="at most 8"):
        local_zone_cidrs("10.0.0.0/16", MAX_LOCAL_ZONE_SUBNETS + 1)


def test_a_local_zone_subnet_per_pool_kept_from_the_control_plane(stack):
    subnets = {s["tags"]["Name"]: s for s in inputs(stack, "aws:ec2/subnet:Subnet")}
    local = {name: s for name, s in subnets.items() if s["availabilityZone"] == LOCAL_ZONE}
    assert sorted(local) == [f"nemotron-{p.pool}-{LOCAL_ZONE}" for p in LOCAL_POOLS]
    assert all("kubernetes.io/role/internal-elb" not in s["tags"] for s in local.values())
    cluster = the(stack, "aws:eks/cluster:Cluster")
    system = next(g for g in inputs(stack, "aws:eks/nodeGroup:NodeGroup"))
    for pool in LOCAL_POOLS:
        subnet_id = f"network-local-{pool.pool}-id"
        assert subnet_id not in cluster["vpcConfig"]["subnetIds"]
        assert subnet_id not in system["subnetIds"]
        routes = stack.named(f"network-local-routes-{pool.pool}").inputs
        assert routes["routes"] == [{"cidrBlock": "0.0.0.0/0", "natGatewayId": f"network-nat-{ZONES[0]}-id"}]


def test_cluster_pinned_restricted_logged_and_encrypted(stack):
    cluster = the(stack, "aws:eks/cluster:Cluster")
    assert (cluster["name"], cluster["version"]) == ("nemotron", "1.33")
    assert cluster["vpcConfig"]["endpointPrivateAccess"] is True
    assert cluster["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert cluster["vpcConfig"]["subnetIds"] == [f"network-private-{z}-id" for z in ZONES]
    assert cluster["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert cluster["encryptionConfig"] == {
        "resources": ["secrets"],
        "provider": {"keyArn": "arn:aws:kms:us-east-1:123456789012:key/eks-secrets-key"},
    }
    assert cluster["upgradePolicy"] == {"supportType": "STANDARD"}
    assert the(stack, "aws:kms/key:Key")["enableKeyRotation"] is True
    log_group = the(stack, "aws:cloudwatch/logGroup:LogGroup")
    assert (log_group["name"], log_group["retentionInDays"]) == ("/aws/eks/nemotron/cluster", 90)
    assert "aws:cloudwatch/logGroup:LogGroup::eks-control-plane-logs" in stack.named("eks-cluster").depends_on


def test_private_endpoint_only_when_no_public_cidrs():
    vpc_config = the(build_stack(public_cidrs=()), "aws:eks/cluster:Cluster")["vpcConfig"]
    assert vpc_config["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in vpc_config


def test_system_node_group_and_addons(stack):
    system = the(stack, "aws:eks/nodeGroup:NodeGroup")
    assert (system["amiType"], system["instanceTypes"], system["version"]) == (
        "AL2023_x86_64_STANDARD",
        ["m7i.2xlarge"],
        "1.33",
    )
    assert "taints" not in system
    addons = {a["addonName"] for a in inputs(stack, "aws:eks/addon:Addon")}
    assert addons == {"vpc-cni", "kube-proxy", "eks-pod-identity-agent", "coredns"}
    assert "aws:eks/nodeGroup:NodeGroup::eks-system-nodes" in stack.named("eks-addon-coredns").depends_on
    assert "aws:eks/addon:Addon::eks-addon-vpc-cni" in stack.named("eks-system-nodes").depends_on


def test_the_vpc_cni_enforces_network_policies(stack):
    """The gateway's NetworkPolicy is enforced only by the VPC CNI's network-policy agent; the request shape
    is CreateAddon's, as botocore validates it."""
    (cni,) = [a for a in inputs(stack, "aws:eks/addon:Addon") if a["addonName"] == "vpc-cni"]
    assert json.loads(cni["configurationValues"]) == {"enableNetworkPolicy": "true"}
    request = {"clusterName": "c", "addonName": "vpc-cni", "configurationValues": cni["configurationValues"]}
    assert problems("eks", "CreateAddon", request) == []


def test_system_nodes_run_on_a_launch_template_with_imdsv2_and_hop_limit_one(stack):
    """EKS's default template leaves the hop limit at 2 (pods reach the node role); the disk moves to the
    template (EKS rejects diskSize beside one). botocore accepts both requests."""
    system = the(stack, "aws:eks/nodeGroup:NodeGroup")
    template = stack.named("eks-system-launch-template").inputs
    assert system["launchTemplate"] == {"id": "eks-system-launch-template-id", "version": "1"}
    assert "diskSize" not in system
    request = launch_template_request("system", template)
    assert request["LaunchTemplateData"]["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpTokens": "required",
        "HttpPutResponseHopLimit": 1,
    }
    (volume,) = request["LaunchTemplateData"]["BlockDeviceMappings"]
    assert volume["Ebs"] == {"VolumeSize": 100, "VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True}
    assert problems("ec2", "CreateLaunchTemplate", request) == []
    assert problems("eks", "CreateNodegroup", node_group_request(system)) == []


def test_kubernetes_provider_is_built_from_the_cluster(stack):
    (provider,) = stack.of_type("pulumi:providers:kubernetes")
    assert provider.parent == "nemotron:aws:EksCluster::eks"
    assert "aws:eks/nodeGroup:NodeGroup::eks-system-nodes" in provider.depends_on
    kubeconfig = json.loads(stack.outputs["kubeconfig"])
    (cluster,) = kubeconfig["clusters"]
    assert cluster["cluster"]["server"] == stack.outputs["endpoint"]
    assert cluster["cluster"]["certificate-authority-data"]
    (user,) = kubeconfig["users"]
    assert user["user"]["exec"]["args"] == [
        "eks",
        "get-token",
        "--cluster-name",
        "nemotron",
        "--region",
        "us-east-1",
        "--output",
        "json",
    ]
    assert provider.to_json()["inputs"]["kubeconfig"] == "[secret]"
