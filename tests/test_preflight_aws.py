"""The preflight's AWS checks against moto's server on loopback (zones, instance types and offerings: AWS's
own data as moto ships it; STS) and, where moto has no such API, against planted answers a botocore Stubber
validates against the service model: EC2 vCPU quotas, capacity reservations and blocks, SageMaker endpoint
quotas, EKS versions. Expected keys and numbers come from the stack data and the planted answers."""

from __future__ import annotations

import copy
import datetime
import functools
from collections.abc import Iterator
from typing import Any

import pytest
from aws_helpers import RESERVATION, capacity_fields, eks_config, node_pool
from conftest import SUITE_TODAY
from preflight_helpers import Clients, moto_client, moto_server, stack_of
from stack_helpers import stack_file_config

from serving_stack.facts import load_facts
from tools.preflight.aws import (
    Calls,
    eks_findings,
    endpoint_quota_findings,
    managed_pools,
    reservation_findings,
    vcpu_quota_findings,
    zone_findings,
)
from tools.preflight.facts import load_permissions, load_quotas

NOW = datetime.datetime.fromisoformat(SUITE_TODAY).replace(tzinfo=datetime.UTC)
PROD = stack_file_config("prod")
REGION = PROD["aws"]["region"]


@functools.cache
def _prod():
    """The committed prod stack, planned once for the module."""
    return stack_of(PROD, "prod")


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with moto_server() as url:
        yield url


def _listed(clients: Clients) -> None:
    """Every call the checks made is a row of tools/preflight/data/permissions.yaml (what docs/preflight.md
    tells users to grant)."""
    rows = {(c.service, c.operation) for c in load_permissions().calls}
    assert set(clients.calls) <= rows, set(clients.calls) - rows


def _offered(clients: Clients, instance_type: str) -> set[str]:
    answer = clients("ec2", REGION).describe_instance_type_offerings(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [instance_type]}]
    )
    return {o["Location"] for o in answer["InstanceTypeOfferings"]}


def test_a_zone_without_the_instance_type_is_a_blocker_naming_the_pools_zone(moto):
    clients = Clients(moto, REGION)
    raw = copy.deepcopy(PROD)
    pool = raw["aws"]["nodePools"][0]
    offered = _offered(clients, pool["instanceType"])
    lacking = [z for z in raw["aws"]["cluster"]["create"]["availabilityZones"] if z not in offered]
    assert lacking, f"moto's data offers {pool['instanceType']} in every zone of the cluster: plant another type"
    # FSx serves one zone: it stays where the pools were
    raw["aws"]["modelCacheStorage"]["fsx"]["availabilityZone"] = pool["availabilityZone"]
    pool["availabilityZone"] = lacking[0]
    stack = stack_of(raw)
    findings = zone_findings(managed_pools(stack), Calls(clients), REGION)
    assert [f.line() for f in findings if f.key == "aws.nodePools[0].availabilityZone"] == [
        f"blocker: aws.nodePools[0].availabilityZone: {pool['instanceType']} is not offered in {lacking[0]}; "
        f"offered in {', '.join(sorted(offered))}; set another zone"
    ]
    _listed(clients)


def test_the_committed_prod_pools_against_the_offerings_moto_ships(moto):
    """Each pool of Pulumi.prod.yaml is reported exactly when AWS's offerings (moto's snapshot) lack its type in its zone."""
    clients = Clients(moto, REGION)
    stack = _prod()
    reported = {f.key for f in zone_findings(managed_pools(stack), Calls(clients), REGION) if f.severity == "blocker"}
    expected = {
        f"aws.nodePools[{i}].availabilityZone"
        for i, pool in enumerate(PROD["aws"]["nodePools"])
        if pool["availabilityZone"] not in _offered(clients, pool["instanceType"])
    }
    assert reported == expected


def test_a_zone_the_account_lacks_is_named_with_the_zones_it_has(moto):
    """Zone names map to an account's zones, and an old account may lack a letter: planted, since moto lists all."""
    clients = Clients(moto, REGION)
    zones = clients("ec2", REGION).describe_availability_zones()["AvailabilityZones"]
    stack = _prod()
    (index, pool), *_ = managed_pools(stack)
    kept = [z for z in zones if z["ZoneName"] != pool.availability_zone]
    stubber = clients.stub("ec2")
    stubber.add_response("describe_availability_zones", {"AvailabilityZones": kept}, {"AllAvailabilityZones": True})
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": []}, None)
    findings = zone_findings(managed_pools(stack), Calls(clients), REGION)
    assert (
        f"blocker: aws.nodePools[{index}].availabilityZone: {pool.availability_zone} is not a zone this account has in {REGION} (it has {', '.join(sorted(z['ZoneName'] for z in kept))}); set one of them"
        in [f.line() for f in findings]
    )


def test_a_local_zone_not_opted_in_names_the_zone_group_to_opt_in(moto):
    """moto has no Local Zones: DescribeAvailabilityZones and the offerings are planted (validated by the model)."""
    from aws_helpers import pool_zone

    instance_type = next(n for n, t in load_facts().aws.instance_types.items() if t.local_zones_only)
    zone = pool_zone(instance_type)
    group = load_facts().aws.regions.regions[REGION].localZones[zone].group
    raw = eks_config([node_pool("gb200", instance_type, **capacity_fields(instance_type))], [])
    clients = Clients(moto, REGION)
    stubber = clients.stub("ec2")
    stubber.add_response(
        "describe_availability_zones",
        {
            "AvailabilityZones": [
                {
                    "ZoneName": zone,
                    "ZoneType": "local-zone",
                    "OptInStatus": "not-opted-in",
                    "GroupName": group,
                    "State": "available",
                }
            ]
        },
        {"AllAvailabilityZones": True},
    )
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": []}, None)
    findings = zone_findings(managed_pools(stack_of(raw)), Calls(clients), REGION)
    (finding,) = findings
    assert finding.key == "aws.nodePools[0].availabilityZone" and finding.severity == "blocker"
    assert f"--group-name {group} --opt-in-status opted-in" in finding.fix


def _quota(code: str, name: str, value: float) -> dict[str, Any]:
    return {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": name, "Value": value, "Unit": "None"}}


def _vcpu_needs(clients: Clients) -> dict[str, int]:
    """Quota code -> vCPUs the committed prod stack needs at maxSize: pools from catalog/instance_types.yaml,
    the system node group from EC2 (moto's DescribeInstanceTypes)."""
    quotas, types = load_quotas().ec2, load_facts().aws.instance_types
    needs: dict[str, int] = {}
    for pool in PROD["aws"]["nodePools"]:
        purchase = quotas.purchaseOptions[pool.get("capacityType", "on-demand")]
        quota = quotas.quota_for(pool["instanceType"].split(".")[0], purchase)
        needs[quota.code] = needs.get(quota.code, 0) + pool["maxSize"] * types[pool["instanceType"]].vcpus
    system = PROD["aws"]["systemNodeGroup"]
    answer = clients("ec2", REGION).describe_instance_types(InstanceTypes=system["instanceTypes"])
    vcpus = max(t["VCpuInfo"]["DefaultVCpus"] for t in answer["InstanceTypes"])
    code = quotas.quota_for(system["instanceTypes"][0].split(".")[0], "on-demand").code
    needs[code] = needs.get(code, 0) + system["maxSize"] * vcpus
    return needs


def test_a_planted_quota_shortfall_is_a_blocker_naming_the_pools_max_size(moto):
    clients = Clients(moto, REGION)
    needs = _vcpu_needs(clients)
    by_code = {q.code: q for q in load_quotas().ec2.quotas}
    gpu_code = load_quotas().ec2.quota_for(PROD["aws"]["nodePools"][0]["instanceType"].split(".")[0], "on-demand").code
    stubber = clients.stub("service-quotas")
    for code in sorted(needs):
        if code == gpu_code:  # one vCPU short of the pools' maximum
            stubber.add_response(
                "get_service_quota",
                _quota(code, by_code[code].name, needs[code] - 1),
                {"ServiceCode": "ec2", "QuotaCode": code},
            )
        else:  # no applied value: AWS's default, which suffices
            stubber.add_client_error(
                "get_service_quota",
                "NoSuchResourceException",
                expected_params={"ServiceCode": "ec2", "QuotaCode": code},
            )
            stubber.add_response(
                "get_aws_default_service_quota",
                _quota(code, by_code[code].name, needs[code]),
                {"ServiceCode": "ec2", "QuotaCode": code},
            )
    stack = _prod()
    calls = Calls(clients)
    findings = vcpu_quota_findings(stack, managed_pools(stack), calls, load_quotas())
    stubber.assert_no_pending_responses()
    assert calls.failures == []
    (finding,) = findings
    assert finding.severity == "blocker" and finding.key == "aws.nodePools[0].maxSize"
    assert f"{needs[gpu_code]} vCPUs of {by_code[gpu_code].name!r}" in finding.problem
    assert f"quota {gpu_code} in {REGION} is {needs[gpu_code] - 1}" in finding.problem
    assert f"--quota-code {gpu_code} --desired-value {needs[gpu_code]}" in finding.fix
    _listed(clients)


def test_a_quota_code_answering_under_another_name_is_not_judged(moto):
    """The data's code is checked against the name Service Quotas gives it: a mismatch warns, never passes."""
    clients = Clients(moto, REGION)
    needs = _vcpu_needs(clients)
    stubber = clients.stub("service-quotas")
    for code in sorted(needs):
        stubber.add_response(
            "get_service_quota", _quota(code, "Some other quota", 10**6), {"ServiceCode": "ec2", "QuotaCode": code}
        )
    stack = _prod()
    findings = vcpu_quota_findings(stack, managed_pools(stack), Calls(clients), load_quotas())
    assert len(findings) == len(needs) and all(f.severity == "warning" and "not judged" in f.problem for f in findings)


CAPACITY_BLOCK = capacity_fields("p5en.48xlarge", "capacity-block")


@functools.cache
def _block_stack():
    """A stack whose one pool runs on a Capacity Block (planned once for the module)."""
    return stack_of(eks_config([node_pool("blocks", "p5en.48xlarge", **CAPACITY_BLOCK)], []))


def _reservation(stack, **overrides: Any) -> dict[str, Any]:
    """The reservation EC2 would describe for the stack's pool: of its type, zone and size, active for a week."""
    (pool,) = stack.plan.pools
    return {
        "CapacityReservationId": RESERVATION,
        "InstanceType": pool.instance_type,
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": pool.availability_zone,
        "TotalInstanceCount": pool.max_size,
        "AvailableInstanceCount": pool.max_size,
        "State": "active",
        "StartDate": NOW - datetime.timedelta(days=1),
        "EndDate": NOW + datetime.timedelta(days=7),
        "ReservationType": "capacity-block",
        **overrides,
    }


# (planted reservation fields, the pool field the blocker names)
PLANTED = {
    "expired capacity block": (
        {"State": "expired", "EndDate": NOW - datetime.timedelta(days=2)},
        "capacityReservationId",
    ),
    "ended but not yet marked": ({"EndDate": NOW - datetime.timedelta(hours=1)}, "capacityReservationId"),
    "in another zone": ({"AvailabilityZone": "us-east-1b"}, "availabilityZone"),
    "of another type": ({"InstanceType": "p5.48xlarge"}, "instanceType"),
    "an ODCR, not a block": ({"ReservationType": "default"}, "capacityType"),
    "too small": ({"TotalInstanceCount": 0, "AvailableInstanceCount": 0}, "desiredSize"),
    "not started, nodes wanted": (
        {"State": "scheduled", "StartDate": NOW + datetime.timedelta(days=3)},
        "capacityReservationId",
    ),
}


@pytest.mark.parametrize("planted", list(PLANTED))
def test_a_capacity_block_that_cannot_hold_the_pool_is_a_blocker_naming_the_key(moto, planted):
    fields, named = PLANTED[planted]
    stack = _block_stack()
    clients = Clients(moto, REGION)
    stubber = clients.stub("ec2")
    stubber.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [_reservation(stack, **fields)]},
        {"CapacityReservationIds": [RESERVATION]},
    )
    findings = reservation_findings(managed_pools(stack), Calls(clients), REGION, NOW)
    stubber.assert_no_pending_responses()
    assert f"aws.nodePools[0].{named}" in {f.key for f in findings if f.severity == "blocker"}, findings
    if planted == "expired capacity block":
        (finding,) = findings
        assert f"Capacity Block {RESERVATION} is expired" in finding.problem
    _listed(clients)


def test_a_block_that_fits_and_a_missing_reservation(moto):
    """The planted reservation of the pool's own shape passes; an id EC2 does not know is a blocker."""
    stack = _block_stack()
    clients = Clients(moto, REGION)
    stubber = clients.stub("ec2")
    stubber.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [_reservation(stack)]},
        {"CapacityReservationIds": [RESERVATION]},
    )
    stubber.add_client_error(
        "describe_capacity_reservations",
        "InvalidCapacityReservationId.NotFound",
        expected_params={"CapacityReservationIds": [RESERVATION]},
    )
    assert reservation_findings(managed_pools(stack), Calls(clients), REGION, NOW) == []
    (missing,) = reservation_findings(managed_pools(stack), Calls(clients), REGION, NOW)
    assert missing.severity == "blocker" and missing.key == "aws.nodePools[0].capacityReservationId"


def _sagemaker_quota(name: str, value: float) -> dict[str, Any]:
    return {"ServiceCode": "sagemaker", "QuotaCode": "L-00000000", "QuotaName": name, "Value": value}


def test_the_endpoint_instance_quota_against_the_endpoints_counts(moto):
    stack = _prod()
    (endpoint,) = stack.plan.sagemaker
    name = load_quotas().sagemaker.endpoint_quota_name(endpoint.config.instanceType)
    clients = Clients(moto, endpoint.region)
    stubber = clients.stub("service-quotas")
    for applied in (0, endpoint.config.initialInstanceCount):
        stubber.add_response(
            "list_aws_default_service_quotas", {"Quotas": [_sagemaker_quota(name, 0)]}, {"ServiceCode": "sagemaker"}
        )
        stubber.add_response(
            "list_service_quotas", {"Quotas": [_sagemaker_quota(name, applied)]}, {"ServiceCode": "sagemaker"}
        )
    short, tight = (endpoint_quota_findings(stack, Calls(clients), load_quotas()) for _ in range(2))
    assert [(f.severity, f.key) for f in short] == [("blocker", "sagemaker.endpoints[0].initialInstanceCount")]
    assert [(f.severity, f.key) for f in tight] == [("warning", "sagemaker.endpoints[0].autoscaling.maxCapacity")]
    _listed(clients)


def _versions(*rows: tuple[str, str]) -> dict[str, Any]:
    return {"clusterVersions": [{"clusterVersion": v, "versionStatus": s} for v, s in rows]}


def test_the_eks_version_offered_in_the_region(moto):
    stack = _prod()
    version = PROD["aws"]["cluster"]["create"]["kubernetesVersion"]
    clients = Clients(moto, REGION)
    stubber = clients.stub("eks")
    stubber.add_response("describe_cluster_versions", _versions((version, "STANDARD_SUPPORT")), {})
    stubber.add_response(
        "describe_cluster_versions", _versions((version, "EXTENDED_SUPPORT"), ("1.99", "STANDARD_SUPPORT")), {}
    )
    stubber.add_response("describe_cluster_versions", _versions(("1.99", "STANDARD_SUPPORT")), {})
    stubber.add_client_error("describe_cluster_versions", "AccessDeniedException", expected_params={})
    stubber.add_response(
        "describe_addon_versions",
        {"addons": []},
        {"kubernetesVersion": version, "addonName": stack.plan.cluster.addons[0].name},
    )
    offered, extended, absent, fallback = (eks_findings(stack, Calls(clients)) for _ in range(4))
    stubber.assert_no_pending_responses()
    assert offered == []
    for findings in (extended, absent, fallback):
        assert [(f.severity, f.key) for f in findings] == [("blocker", "aws.cluster.create.kubernetesVersion")]
    assert "1.99" in extended[0].fix and "1.99" in absent[0].fix
    _listed(clients)


def test_an_existing_cluster_is_described_by_eks(moto):
    """moto serves EKS CreateCluster/DescribeCluster: the cluster the stack names, at another version than it
    states, and a name EKS does not know."""
    from stack_helpers import BASE_CONFIG

    clients = Clients(moto, REGION)
    eks = moto_client(moto, "eks", REGION)  # planting: not a call of the checks
    stated = PROD["aws"]["cluster"]["create"]["kubernetesVersion"]
    minor = int(stated.split(".")[1])
    running = f"1.{minor - 1}"
    eks.create_cluster(
        name="preflight-existing",
        version=running,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-0123456789abcdef0"]},
    )

    def existing(name: str) -> dict[str, Any]:
        cluster = {
            "name": name,
            "kubernetesVersion": stated,
            "vpcId": "vpc-0123456789abcdef0",
            "privateSubnetIds": {f"{REGION}a": "subnet-0123456789abcdef0"},
            "nodeSecurityGroupIds": ["sg-0123456789abcdef0"],
        }
        return {**copy.deepcopy(BASE_CONFIG), "aws": {"region": REGION, "cluster": {"existing": cluster}}}

    (other_version,) = eks_findings(stack_of(existing("preflight-existing")), Calls(clients))
    assert (
        other_version.key == "aws.cluster.existing.kubernetesVersion"
        and f"runs Kubernetes {running}" in other_version.problem
    )
    (unknown,) = eks_findings(stack_of(existing("preflight-absent")), Calls(clients))
    assert (unknown.severity, unknown.key) == ("blocker", "aws.cluster.existing.name")
    _listed(clients)
