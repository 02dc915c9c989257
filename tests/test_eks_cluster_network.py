"""Network and cluster: private subnets in every AZ behind NAT with an S3 gateway endpoint, and an EKS
cluster with a pinned version, a restricted endpoint, all control-plane logs, KMS secrets encryption, a
CPU system node group, core add-ons, and the Kubernetes provider built from its kubeconfig."""
from __future__ import annotations

import json

import pulumi
import pytest

from aws_helpers import inputs, run_components, the
from serving_stack.components.eks_cluster import EksCluster, EksClusterArgs, SystemNodeGroupSpec
from serving_stack.components.network import Network, NetworkArgs, subnet_cidrs
from serving_stack.facts.instance_types import load_aws_catalog

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


def build_stack(public_cidrs=("203.0.113.0/24",), nat_per_az=True):
    catalog = load_aws_catalog()

    def build():
        network = Network("network", NetworkArgs(cluster_name="nemotron", region="us-east-1", cidr="10.0.0.0/16", availability_zones=ZONES, nat_gateway_per_az=nat_per_az))
        cluster = EksCluster("eks", EksClusterArgs(
            cluster_name="nemotron", kubernetes_version="1.33", region="us-east-1", private_subnet_ids=network.private_subnet_ids,
            endpoint_public_access_cidrs=list(public_cidrs), log_retention_days=90,
            system_nodes=SystemNodeGroupSpec(instance_types=["m7i.2xlarge"], min_size=2, desired_size=2, max_size=4, disk_size_gib=100),
            addons=catalog.platform.eksAddons.cluster, node_managed_policies=catalog.platform.nodeManagedPolicies,
        ))
        return {"kubeconfig": pulumi.Output.unsecret(cluster.kubeconfig), "endpoint": cluster.endpoint, "name": cluster.cluster_name}

    return run_components(build)


@pytest.fixture(scope="module")
def stack():
    return build_stack()


def test_private_subnets_in_every_az_behind_nat(stack):
    private = {s["availabilityZone"]: s for s in inputs(stack, "aws:ec2/subnet:Subnet") if "internal-elb" in json.dumps(s["tags"])}
    assert sorted(private) == ZONES
    assert [private[z]["cidrBlock"] for z in ZONES] == ["10.0.0.0/18", "10.0.64.0/18", "10.0.128.0/18"]
    assert len(stack.of_type("aws:ec2/natGateway:NatGateway")) == 3
    private_routes = [t for t in inputs(stack, "aws:ec2/routeTable:RouteTable") if "natGatewayId" in t["routes"][0]]
    assert len(private_routes) == 3 and all(t["routes"][0]["cidrBlock"] == "0.0.0.0/0" for t in private_routes)


def test_one_nat_gateway_when_not_per_az():
    assert len(build_stack(nat_per_az=False).of_type("aws:ec2/natGateway:NatGateway")) == 1


def test_s3_gateway_endpoint_on_the_private_route_tables(stack):
    endpoint = the(stack, "aws:ec2/vpcEndpoint:VpcEndpoint")
    assert (endpoint["serviceName"], endpoint["vpcEndpointType"]) == ("com.amazonaws.us-east-1.s3", "Gateway")
    assert endpoint["routeTableIds"] == [f"network-private-routes-{z}-id" for z in ZONES]


def test_subnet_plan_fits_the_vpc():
    private, public = subnet_cidrs("10.0.0.0/16", 2)
    assert private == ["10.0.0.0/18", "10.0.64.0/18"] and public == ["10.0.192.0/22", "10.0.196.0/22"]


def test_cluster_pinned_restricted_logged_and_encrypted(stack):
    cluster = the(stack, "aws:eks/cluster:Cluster")
    assert (cluster["name"], cluster["version"]) == ("nemotron", "1.33")
    assert cluster["vpcConfig"]["endpointPrivateAccess"] is True
    assert cluster["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert cluster["vpcConfig"]["subnetIds"] == [f"network-private-{z}-id" for z in ZONES]
    assert cluster["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert cluster["encryptionConfig"] == {"resources": ["secrets"], "provider": {"keyArn": "arn:aws:kms:us-east-1:123456789012:key/eks-secrets-key"}}
    assert cluster["upgradePolicy"] == {"supportType": "STANDARD"}
    assert the(stack, "aws:kms/key:Key")["enableKeyRotation"] is True
    log_group = the(stack, "aws:cloudwatch/logGroup:LogGroup")
    assert (log_group["name"], log_group["retentionInDays"]) == ("/aws/eks/nemotron/cluster", 90)
    assert "aws:cloudwatch/logGroup:LogGroup::eks-control-plane-logs" in stack.named("eks-cluster").depends_on


def test_private_endpoint_only_when_no_public_cidrs():
    vpc_config = the(build_stack(public_cidrs=()), "aws:eks/cluster:Cluster")["vpcConfig"]
    assert vpc_config["endpointPublicAccess"] is False and "publicAccessCidrs" not in vpc_config


def test_system_node_group_and_addons(stack):
    system = the(stack, "aws:eks/nodeGroup:NodeGroup")
    assert (system["amiType"], system["instanceTypes"]) == ("AL2023_x86_64_STANDARD", ["m7i.2xlarge"])
    assert "taints" not in system
    addons = {a["addonName"] for a in inputs(stack, "aws:eks/addon:Addon")}
    assert addons == {"vpc-cni", "kube-proxy", "eks-pod-identity-agent", "coredns"}
    assert "aws:eks/nodeGroup:NodeGroup::eks-system-nodes" in stack.named("eks-addon-coredns").depends_on
    assert "aws:eks/addon:Addon::eks-addon-vpc-cni" in stack.named("eks-system-nodes").depends_on


def test_kubernetes_provider_is_built_from_the_cluster(stack):
    (provider,) = stack.of_type("pulumi:providers:kubernetes")
    assert provider.parent == "nemotron:aws:EksCluster::eks"
    assert "aws:eks/nodeGroup:NodeGroup::eks-system-nodes" in provider.depends_on
    kubeconfig = json.loads(stack.outputs["kubeconfig"])
    (cluster,) = kubeconfig["clusters"]
    assert cluster["cluster"]["server"] == stack.outputs["endpoint"]
    assert cluster["cluster"]["certificate-authority-data"]
    (user,) = kubeconfig["users"]
    assert user["user"]["exec"]["args"] == ["eks", "get-token", "--cluster-name", "nemotron", "--region", "us-east-1", "--output", "json"]
    assert provider.to_json()["inputs"]["kubeconfig"] == "[secret]"
