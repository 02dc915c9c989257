"""Bad pool and placement config stops the program with one line naming the key path, before any
resource is registered; good config resolves pools and target placements."""

from __future__ import annotations

import copy
import dataclasses
import ipaddress

import pytest
from aws_helpers import eks_config, node_pool
from catalog_picks import pick, picks
from plan_helpers import FACTS, plan_of
from stack_helpers import BASE_CONFIG, assert_rejected_before_any_resource

from serving_stack.config import ConfigError, parse_stack_config
from serving_stack.config.serving import TargetConfig
from serving_stack.facts.catalog import Catalog, Recipe, load_catalog
from serving_stack.facts.name_limits import load_name_limits
from serving_stack.plan.serving import effective_replicas, gpus_used

pytestmark = pytest.mark.catalog_driven
H200 = node_pool("h200", "p5en.48xlarge")
ON_H200 = pick(disaggregated=False, gpu="h200", routing="single").id
ON_B200 = pick(disaggregated=False, gpu="b200", routing="single").id
ON_GB200 = pick(disaggregated=False, gpu="gb200", routing="single").id
DISAGG_H200 = pick(disaggregated=True, gpu="h200").id
SINGLE_WORKER = pick(disaggregated=False, routing="single", gpu="h100")


def gpus_of(recipe) -> int:
    return gpus_used(recipe, effective_replicas(recipe, TargetConfig(id=recipe.id)))


# An H100 target with more GPUs than two 1-GPU nodes hold (upstream's KV-router variants run 4 workers).
WIDE_H100 = next(iter(r for r in picks(gpu="h100") if gpus_of(r) > 2), SINGLE_WORKER)
CB = {"capacityType": "capacity-block", "capacityReservationId": "cr-0123456789abcdef0", "kubernetesVersion": "1.33"}


def with_cluster(**create):
    return {"create": {**eks_config([], [])["aws"]["cluster"]["create"], **create}}


BAD_CONFIGS = {
    "eks without aws": (
        {**BASE_CONFIG, "kubernetes": {"cluster": {"source": "eks"}}},
        "aws: required when kubernetes.cluster.source is eks",
    ),
    "create with kubeconfig source": (
        {**eks_config([H200], []), "kubernetes": {"cluster": {"source": "kubeconfig", "context": "x"}}},
        "kubernetes.cluster.source: must be eks when aws.cluster.create is set",
    ),
    "both create and existing": (
        eks_config(
            [],
            [],
            cluster={
                **with_cluster(),
                "existing": {
                    "name": "c",
                    "vpcId": "vpc-0123456789abcdef0",
                    "privateSubnetIds": {"us-east-1a": "subnet-0123456789abcdef0"},
                    "nodeSecurityGroupIds": ["sg-0123456789abcdef0"],
                },
            },
        ),
        "aws.cluster: set exactly one of create, existing",
    ),
    "API endpoint open to the internet": (
        eks_config([], [], cluster=with_cluster(endpointPublicAccessCidrs=["0.0.0.0/0"])),
        "aws.cluster.create.endpointPublicAccessCidrs[0]: 0.0.0.0/0 opens the API endpoint to the internet",
    ),
    "unknown instance type": (
        eks_config([node_pool("gpu", "p5.96xlarge")], []),
        "aws.nodePools[0].instanceType: unknown instance type 'p5.96xlarge'; allowed: p5.48xlarge, p5.4xlarge",
    ),
    "desired above max": (
        eks_config([node_pool("gpu", "p5.48xlarge", desiredSize=3)], []),
        "aws.nodePools[0].desiredSize: 3 is not between minSize 0 and maxSize 2",
    ),
    "capacity block without reservation": (
        eks_config([node_pool("gpu", "p5.48xlarge", capacityType="capacity-block")], []),
        "aws.nodePools[0].capacityReservationId: required with capacityType capacity-block: the launch template targets the reservation",
    ),
    "reservation id malformed": (
        eks_config([node_pool("gpu", "p5.48xlarge", capacityReservationId="cb-12")], []),
        "aws.nodePools[0].capacityReservationId: must be a capacity reservation id",
    ),
    "gb200 on demand": (
        eks_config([node_pool("gb", "p6e-gb200.36xlarge")], []),
        "aws.nodePools[0].capacityType: p6e-gb200.36xlarge is not sold as on-demand; allowed: capacity-block",
    ),
    "gb200 on kubernetes 1.32": (
        eks_config(
            [node_pool("gb", "p6e-gb200.36xlarge", **{**CB, "kubernetesVersion": "1.32"})],
            [],
            cluster=with_cluster(kubernetesVersion="1.32"),
        ),
        "aws.nodePools[0].instanceType: p6e-gb200.36xlarge needs Kubernetes >= 1.33, the cluster runs 1.32",
    ),
    "pool AZ outside the cluster": (
        eks_config([node_pool("gpu", "p5.48xlarge", availabilityZone="us-east-1d")], []),
        "aws.nodePools[0].availabilityZone: 'us-east-1d' is not a cluster AZ; allowed: us-east-1a, us-east-1b",
    ),
    "infiniband on an EC2 pool": (
        eks_config([node_pool("gpu", "p5en.48xlarge", fabric="ib")], []),
        "aws.nodePools[0].fabric: EC2 instances have no InfiniBand",
    ),
    "product label of another GPU": (
        eks_config([node_pool("gpu", "p5en.48xlarge", gpuProduct="NVIDIA-H100-80GB-HBM3")], []),
        "aws.nodePools[0].gpuProduct: 'NVIDIA-H100-80GB-HBM3' is not a product label of h200; allowed: NVIDIA-H200, NVIDIA-H200-SXM",
    ),
    "duplicate pool name": (eks_config([H200, H200], []), "aws.nodePools[1].name: duplicate pool name 'h200'"),
    "unknown pool of a target": (
        eks_config([H200], [{"id": ON_H200, "nodePool": "h300"}]),
        "targets[0].nodePool: unknown node pool 'h300'; allowed: h200",
    ),
    "target on a pool of another GPU": (
        eks_config([H200], [{"id": ON_B200, "nodePool": "h200"}]),
        f"targets[0].nodePool: '{ON_B200}' needs b200 GPUs; pool 'h200' has h200",
    ),
    "no pool for the target's GPU": (
        eks_config([H200], [{"id": ON_B200}]),
        f"targets[0].nodePool: no pool has b200 GPUs for '{ON_B200}'; name one; allowed: h200",
    ),
    "two pools, target names none": (
        eks_config([H200, {**H200, "name": "h200-b"}], [{"id": ON_H200}]),
        f"targets[0].nodePool: several pools have h200 GPUs for '{ON_H200}'; name one; allowed: h200, h200-b",
    ),
    "GB200 target on an x86 pool": (
        eks_config([H200], [{"id": ON_GB200, "nodePool": "h200"}]),
        f"targets[0].nodePool: '{ON_GB200}' needs arm64 nodes; pool 'h200' is x86_64",
    ),
    "disaggregated on a pool without fabric": (
        eks_config([{**H200, "fabric": "none"}], [{"id": DISAGG_H200}]),
        f"targets[0].nodePool: disaggregated '{DISAGG_H200}' needs a KV-transfer fabric; pool 'h200' has none; allowed: a pool with fabric efa or ib",
    ),
    "more GPUs than the pool can hold": (
        eks_config([node_pool("h100", "p5.4xlarge")], [{"id": WIDE_H100.id}]),
        f"aws.nodePools[0].maxSize: targets on pool 'h100' use {gpus_of(WIDE_H100)} GPUs, more than 2 nodes x 1 GPUs",
    ),
    "FSx capacity off the step": (
        {
            **eks_config([H200], [], modelCacheStorage={"backend": "fsx"}),
            "modelCache": {"storageClassName": "fsx", "size": "300Gi"},
        },
        "modelCache.size: FSx for Lustre PERSISTENT_2 capacity must be 1200Gi or a multiple of 2400Gi (got 300Gi)",
    ),
    "FSx with pools in two AZs": (
        eks_config(
            [H200, node_pool("b200", "p6-b200.48xlarge", availabilityZone="us-east-1b")],
            [],
            modelCacheStorage={"backend": "fsx"},
        ),
        "aws.modelCacheStorage.fsx.availabilityZone: GPU pools are in ['us-east-1a', 'us-east-1b']; name the AZ of the file system",
    ),
    "nodePool without aws": (
        {**BASE_CONFIG, "targets": [{"id": SINGLE_WORKER.id, "nodePool": "h100"}]},
        "targets[0].nodePool: no aws.nodePools are defined",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_aws_config_is_rejected_before_any_resource(case):
    assert_rejected_before_any_resource(*BAD_CONFIGS[case])


def test_more_gpus_per_pod_than_a_node_holds():
    """No catalog recipe asks more than 1 GPU per pod; a TP=2 variant of one must not fit a 1-GPU pool."""
    catalog = load_catalog()
    recipe = SINGLE_WORKER
    dgd = copy.deepcopy(recipe.dgd)
    (component,) = [c for c in dgd["spec"]["components"] if c["type"] == "worker"]
    worker = component["podTemplate"]["spec"]["containers"][0]
    worker["resources"]["limits"]["nvidia.com/gpu"] = worker["resources"]["requests"]["nvidia.com/gpu"] = "2"
    tp2 = Catalog(catalog.data, {recipe.id: Recipe(recipe.entry, recipe.config_map, dgd)}, catalog.model_cache)
    raw = eks_config([node_pool("h100", "p5.4xlarge", maxSize=4)], [{"id": recipe.id}])
    with pytest.raises(ConfigError) as raised:
        plan_of(raw, facts=dataclasses.replace(FACTS, catalog=tp2))
    assert (
        str(raised.value)
        == f"targets[0].nodePool: {component['name']} asks 2 GPUs per pod; a node of pool 'h100' holds 1"
    )


def test_good_config_resolves_pools_and_placements():
    raw = eks_config(
        [
            H200,
            node_pool("gb200", "p6e-gb200.36xlarge", **CB),
            node_pool("h200-ib", None, managed=False, nodeFacts={"gpu": "h200", "gpus": 8}, fabric="ib"),
        ],
        [{"id": ON_H200, "nodePool": "h200"}, {"id": DISAGG_H200, "nodePool": "h200-ib"}, {"id": ON_GB200}],
    )
    plan = plan_of(raw)
    pools = {pool.name: pool for pool in plan.pools}
    specs = {spec.name: spec for spec in plan.managed_pools}
    assert (pools["h200"].fabric, pools["h200"].efa_per_gpu, specs["h200"].eks_capacity_type) == ("efa", 2, "ON_DEMAND")
    assert (pools["gb200"].arch, pools["gb200"].ami_type, specs["gb200"].eks_capacity_type) == (
        "arm64",
        "AL2023_ARM_64_NVIDIA",
        "CAPACITY_BLOCK",
    )
    assert (pools["h200-ib"].fabric, pools["h200-ib"].managed, pools["h200-ib"].gpus_per_node) == ("ib", False, 8)
    assert pools["h200-ib"].node_labels == {
        "nemotron.nvidia.com/pool": "h200-ib",
        "nemotron.nvidia.com/fabric": "ib",
        "nemotron.nvidia.com/gpu": "h200",
    }
    placed = {t.selected.id: t.pool.name for t in plan.serving.targets if t.pool}
    assert placed == {ON_H200: "h200", DISAGG_H200: "h200-ib", ON_GB200: "gb200"}


def test_committed_kubeconfig_stacks_still_parse_without_aws():
    assert parse_stack_config(BASE_CONFIG).aws is None


def test_existing_cluster_pool_takes_the_subnet_of_its_az():
    existing = {
        "existing": {
            "name": "shared-gpu",
            "kubernetesVersion": "1.33",
            "vpcId": "vpc-0123456789abcdef0",
            "privateSubnetIds": {"us-east-1a": "subnet-0aaaaaaaaaaaaaaaa"},
            "nodeSecurityGroupIds": ["sg-0123456789abcdef0"],
        }
    }
    raw = {
        **eks_config([H200], [{"id": ON_H200}], cluster=existing),
        "kubernetes": {"cluster": {"source": "kubeconfig", "context": "shared"}},
    }
    assert plan_of(raw).managed_pools[0].subnet_id == "subnet-0aaaaaaaaaaaaaaaa"
    elsewhere = {**raw, "aws": {**raw["aws"], "nodePools": [{**H200, "availabilityZone": "us-east-1b"}]}}
    with pytest.raises(
        ConfigError,
        match=r"aws.nodePools\[0\].subnetId: no subnet for us-east-1b in aws.cluster.existing.privateSubnetIds",
    ):
        plan_of(elsewhere)


def test_a_pool_subnet_on_the_vpc_the_stack_creates_is_refused():
    """A subnet id names an existing subnet; the VPC `aws.cluster.create` builds has none before `up`."""
    raw = eks_config([{**H200, "subnetId": "subnet-0aaaaaaaaaaaaaaaa"}], [{"id": ON_H200}])
    assert "create" in raw["aws"]["cluster"]
    with pytest.raises(ConfigError, match=r"^aws.nodePools\[0\].subnetId: aws.cluster.create builds the VPC"):
        plan_of(raw)


PUBLIC_CIDRS = load_name_limits().eksPublicAccessCidrs


def public_access_error(cidrs: list[str]) -> str:
    with pytest.raises(ConfigError) as raised:
        plan_of(eks_config([], [], cluster=with_cluster(endpointPublicAccessCidrs=cidrs)))
    return str(raised.value)


@pytest.mark.parametrize("special", PUBLIC_CIDRS.nonPublic)
def test_a_public_endpoint_range_inside_a_special_purpose_range_is_refused(special):
    """Every range of the data, as itself and as one address inside it, beside a good range."""
    inside = str(next(ipaddress.ip_network(special).hosts())) + "/32"
    for cidr in (special, inside):
        message = public_access_error(["198.51.100.0/24", cidr])
        assert message.startswith("aws.cluster.create.endpointPublicAccessCidrs[1]: ") and special in message, message


def test_more_public_endpoint_ranges_than_eks_takes_are_refused():
    ranges = [f"52.{i}.0.0/16" for i in range(PUBLIC_CIDRS.maxEntries + 1)]
    assert public_access_error(ranges).startswith(
        f"aws.cluster.create.endpointPublicAccessCidrs: {PUBLIC_CIDRS.maxEntries + 1} ranges; EKS takes at most 40"
    )
    plan_of(eks_config([], [], cluster=with_cluster(endpointPublicAccessCidrs=ranges[:-1])))


def test_public_and_documentation_ranges_are_accepted():
    plan_of(eks_config([], [], cluster=with_cluster(endpointPublicAccessCidrs=["3.0.0.0/8", "203.0.113.0/24"])))
