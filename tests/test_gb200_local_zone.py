"""GB200 end to end, the whole program under mocks: a P6e-GB200 Capacity Block pool in its Local Zone gets a
subnet of its own there (never the control plane's), a launch template with the instance type, the
reservation and the 4-EFA layout, a node group with no instance types; the EFA device plugin pinned at or
above the type's minimum and listing it; the NVIDIA DRA driver on that pool; and a disaggregated GB200
target whose workers request what the node exposes and the label says."""

from __future__ import annotations

import dataclasses
import functools

import pytest
from aws_helpers import RESERVATION, capacity_fields, eks_config, node_pool, pool_zone
from plan_helpers import FACTS, plan_of
from stack_helpers import assert_rejected_before_any_resource, run_config

from serving_stack.errors import ConfigError
from serving_stack.facts.aws import load_aws_catalog, version_key
from serving_stack.facts.catalog import load_catalog
from serving_stack.names import EFA_PER_GPU_LABEL, EFA_RESOURCE, GPU_RESOURCE, POOL_LABEL

CATALOG = load_aws_catalog()
(GB200,) = [name for name, i in CATALOG.instance_types.items() if i.computeDomains and i.local_zones_only]
INSTANCE = CATALOG.instance_types[GB200]
ZONE = pool_zone(GB200)
RELEASE = "kubernetes:helm.sh/v3:Release"


def raw() -> dict:
    target = next(
        r.id
        for r in load_catalog().recipes.values()
        if r.disaggregated and CATALOG.gpu_of_product(r.gpu_products[0]) == INSTANCE.gpu
    )
    return eks_config(
        [node_pool("ultra", GB200, minSize=0, desiredSize=2, maxSize=9, **capacity_fields(GB200))],
        [{"id": target}],
        modelCacheStorage={"backend": "fsx", "fsx": {"availabilityZone": "us-east-1a"}},
    )


@functools.lru_cache(maxsize=1)
def run():
    return run_config(raw())


def inputs_of(type_token: str) -> list[dict]:
    return [r.inputs for r in run().of_type(type_token)]


def test_the_pool_gets_a_local_zone_subnet_the_control_plane_never_sees():
    (local,) = [s for s in run().of_type("aws:ec2/subnet:Subnet") if s.inputs["availabilityZone"] == ZONE]
    assert CATALOG.regions.local_zone("us-east-1", ZONE).group in INSTANCE.localZoneGroups
    (cluster,) = inputs_of("aws:eks/cluster:Cluster")
    assert f"{local.name}-id" not in cluster["vpcConfig"]["subnetIds"]
    pool_group = run().named("pool-ultra-node-group").inputs
    assert pool_group["subnetIds"] == [f"{local.name}-id"]
    (storage,) = inputs_of("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert storage["subnetIds"] != f"{local.name}-id"


def test_capacity_block_launch_template_and_node_group():
    template = run().named("pool-ultra-launch-template").inputs
    group = run().named("pool-ultra-node-group").inputs
    assert (template["instanceType"], "instanceTypes" in group) == (GB200, False)
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert (
        template["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"]
        == RESERVATION
    )
    assert (group["capacityType"], group["amiType"]) == ("CAPACITY_BLOCK", INSTANCE.amiType)
    efa_only = [
        (n["networkCardIndex"], n["deviceIndex"])
        for n in template["networkInterfaces"]
        if n["interfaceType"] == "efa-only"
    ]
    assert efa_only == [
        (i.networkCardIndex, i.deviceIndex) for i in INSTANCE.efa_layout() if i.interfaceType == "efa-only"
    ]
    assert len(efa_only) == INSTANCE.efaInterfaces == int(group["labels"][EFA_PER_GPU_LABEL]) * INSTANCE.gpus


def test_efa_plugin_at_the_types_minimum_and_dra_driver_on_the_pool():
    releases = {r["chart"]: r for r in inputs_of(RELEASE)}
    efa = releases[CATALOG.platform.devicePlugins.efa.chart]
    assert version_key(efa["version"]) >= version_key(INSTANCE.minEfaDevicePlugin or "")
    assert efa["values"]["supportedInstanceLabels"]["values"] == [GB200]
    dra = releases[CATALOG.platform.draDriver.chart]
    assert dra["version"] == CATALOG.platform.draDriver.version
    assert dra["values"]["resources"]["computeDomains"] == {"enabled": True}
    (term,) = dra["values"]["kubeletPlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert {"key": POOL_LABEL, "operator": "In", "values": ["ultra"]} in term["matchExpressions"]


def test_workers_request_what_the_node_exposes():
    (dgd,) = inputs_of("kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment")
    workers = [c for c in dgd["spec"]["components"] if c["type"] in ("prefill", "decode")]
    assert workers
    for worker in workers:
        (container,) = [
            c for c in worker["podTemplate"]["spec"]["containers"] if GPU_RESOURCE in c["resources"]["limits"]
        ]
        limits = container["resources"]["limits"]
        assert int(limits[EFA_RESOURCE]) == INSTANCE.efaInterfaces // INSTANCE.gpus * int(limits[GPU_RESOURCE])


def test_the_local_zone_route_table_reaches_s3_through_the_gateway_endpoint():
    (local,) = [s for s in run().of_type("aws:ec2/subnet:Subnet") if s.inputs["availabilityZone"] == ZONE]
    (association,) = [
        a.inputs
        for a in run().of_type("aws:ec2/routeTableAssociation:RouteTableAssociation")
        if a.inputs["subnetId"] == f"{local.name}-id"
    ]
    (endpoint,) = [
        e.inputs
        for e in run().of_type("aws:ec2/vpcEndpoint:VpcEndpoint")
        if e.inputs.get("vpcEndpointType") == "Gateway"
    ]
    assert endpoint["serviceName"].endswith(".s3")
    assert association["routeTableId"] in endpoint["routeTableIds"]


def test_an_efs_model_cache_is_refused_for_a_local_zone_pool():
    raw = eks_config(
        [node_pool("ultra", GB200, minSize=0, desiredSize=2, maxSize=9, **capacity_fields(GB200))],
        [],
        modelCacheStorage={"backend": "efs"},
    )
    assert_rejected_before_any_resource(
        raw,
        f"aws.modelCacheStorage.backend: efs cannot be mounted by pool 'ultra' (aws.nodePools[0]) in Local Zone {ZONE}",
    )


def test_the_recorded_layout_is_not_contested_and_a_contested_layout_warns():
    """The committed layout (the EKS User Guide's example) is not marked contested (no warning); a layout marked `contested` (built here,
    not committed) is a warning naming the pool."""
    assert INSTANCE.contested_layout is None
    assert not [w for w in run().plan.warnings if "EFA layout" in w]
    layout = INSTANCE.efaLayout.model_copy(update={"contested": "no primary source read"})
    contested_type = INSTANCE.model_copy(update={"efaLayout": layout})
    contested = dataclasses.replace(CATALOG, instance_types={**CATALOG.instance_types, GB200: contested_type})
    (warning,) = [w for w in plan_of(raw(), facts=dataclasses.replace(FACTS, aws=contested)).warnings if "EFA" in w]
    assert warning.startswith(f"aws.nodePools: pool 'ultra' ({GB200}) uses a CONTESTED EFA layout: no primary source")


def test_a_class_the_stack_does_not_create_needs_the_statement_that_it_mounts_in_local_zones():
    """EFS has no mount target in a Local Zone; a class the stack does not create may be EFS."""
    unknown = raw()
    del unknown["aws"]["modelCacheStorage"]
    unknown["modelCache"]["mountsInLocalZones"] = False
    with pytest.raises(ConfigError) as caught:
        plan_of(unknown)
    message = str(caught.value)
    assert message.startswith(f"aws.nodePools[0].availabilityZone: pool 'ultra' is in Local Zone {ZONE}")
    assert message.endswith(
        "allowed: aws.modelCacheStorage.backend fsx, or modelCache.mountsInLocalZones: true for a class that does"
    )
    unknown["modelCache"]["mountsInLocalZones"] = True
    assert plan_of(unknown).pools
