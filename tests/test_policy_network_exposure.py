"""admin-ports-closed, sagemaker-network and the S3 ACL half of data-protection: what the stack opens to the
Internet. Each rule has its violating and passing tables; the admin-port rule is then run on every admin port
of its data file in every form of ingress rule (inline, SecurityGroupRule, VPC ingress rule), every way of
writing the world (`0.0.0.0/0`, `::/0`, halves, quarters, IPv4-mapped) and every way of holding the port
(exact, a range, protocol -1 or its number), counted; hypothesis draws ranges around each port."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_helpers import check_stack, resource

from policy.nemotron_policies.network_exposure import ADMIN_PORTS, world_range

SG = "aws:ec2/securityGroup:SecurityGroup"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
WORLD = {
    "0.0.0.0/0": ["0.0.0.0/0"],
    "::/0": ["::/0"],
    "halves": ["0.0.0.0/1", "128.0.0.0/1"],
    "quarters": ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"],
    "ipv4-mapped": ["::ffff:0:0/96"],
    "a public /8": ["3.0.0.0/8"],
}
NARROW = {"vpc": ["10.40.0.0/16"], "office": ["203.0.113.0/24"], "private /8": ["10.0.0.0/8"], "ula": ["fd00::/8"]}


def ingress_resources(form: str, cidrs: list[str], low: int, high: int, protocol: str = "tcp") -> list:
    """One security group opening `low`-`high` to `cidrs`, written in `form`."""
    v4 = [c for c in cidrs if ":" not in c]
    v6 = [c for c in cidrs if ":" in c]
    if form == "inline":
        rule = {"fromPort": low, "toPort": high, "protocol": protocol, "cidrBlocks": v4, "ipv6CidrBlocks": v6}
        return [resource(SG, {"vpcId": "vpc-1", "ingress": [rule]}, "sg")]
    group = resource(SG, {"vpcId": "vpc-1"}, "sg")
    if form == "securityGroupRule":
        rule = {"type": "ingress", "securityGroupId": "sg-1", "fromPort": low, "toPort": high, "protocol": protocol}
        return [group, resource(SG_RULE, {**rule, "cidrBlocks": v4, "ipv6CidrBlocks": v6}, "r", dependencies=[group])]
    rules = [
        resource(
            INGRESS,
            {
                "securityGroupId": "sg-1",
                "fromPort": low,
                "toPort": high,
                "ipProtocol": protocol,
                ("cidrIpv6" if ":" in cidr else "cidrIpv4"): cidr,
            },
            f"r{index}",
            dependencies=[group],
        )
        for index, cidr in enumerate(cidrs)
    ]
    return [group, *rules]


def admin_findings(resources: list) -> list[str]:
    return [message for message, _ in check_stack("admin-ports-closed", resources)]


FORMS = ("inline", "securityGroupRule", "vpcIngressRule")


def holders(port) -> list[tuple[int, int, str]]:
    return [
        (port.low, port.high, port.protocol),
        (0, 65535, port.protocol),
        (port.low - 1, port.high + 1, port.protocol),
        (-1, -1, "-1"),
        (0, 0, "all"),
        (port.low, port.high, {"tcp": "6", "udp": "17"}[port.protocol]),
    ]


@pytest.mark.slow  # every admin port x rule form x world range x port range: hundreds of pack runs
def test_every_admin_port_open_to_the_world_is_reported_in_every_form():
    cases = list(itertools.product(ADMIN_PORTS, FORMS, WORLD, range(6)))
    missed = []
    for port, form, world, holder in cases:
        low, high, protocol = holders(port)[holder]
        found = admin_findings(ingress_resources(form, WORLD[world], low, high, protocol))
        if not any(port.name in m for m in found):
            missed.append((port.name, form, world, holder))
    assert (len(cases), missed) == (len(ADMIN_PORTS) * 3 * 6 * 6, [])


@pytest.mark.parametrize(("form", "narrow"), list(itertools.product(FORMS, NARROW)))
def test_admin_ports_open_to_private_or_narrow_ranges_pass(form, narrow):
    assert admin_findings(ingress_resources(form, NARROW[narrow], 22, 22)) == []


@pytest.mark.parametrize("form", FORMS)
def test_public_service_ports_open_to_the_world_pass(form):
    assert admin_findings(ingress_resources(form, ["0.0.0.0/0", "::/0"], 443, 443)) == []
    assert admin_findings(ingress_resources(form, ["0.0.0.0/0"], 80, 80, "udp")) == []


def test_halves_in_two_rules_of_one_group_are_merged():
    group = resource(SG, {"vpcId": "vpc-1"}, "sg")
    halves = [
        resource(
            INGRESS,
            {"securityGroupId": "sg-1", "fromPort": 22, "toPort": 22, "ipProtocol": "tcp", "cidrIpv4": c},
            f"r{i}",
            dependencies=[group],
        )
        for i, c in enumerate(("0.0.0.0/1", "128.0.0.0/1"))
    ]
    assert len(admin_findings([group, *halves])) == 1


@settings(max_examples=80, deadline=None)
@given(port=st.sampled_from(ADMIN_PORTS), below=st.integers(0, 1000), above=st.integers(0, 1000))
def test_any_range_holding_an_admin_port_is_reported(port, below, above):
    low, high = max(port.low - below, 0), min(port.high + above, 65535)
    assert admin_findings(ingress_resources("inline", ["0.0.0.0/0"], low, high, port.protocol))


def test_world_ranges():
    assert [world_range(c) for c in ("0.0.0.0/0", "::/0", "::ffff:0:0/96", "3.0.0.0/8")] == [True] * 4
    assert [world_range(c) for c in ("10.0.0.0/8", "203.0.113.0/24", "fd00::/8", "not-a-cidr")] == [False] * 4


SUBNET = "aws:ec2/subnet:Subnet"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
ROUTE = "aws:ec2/route:Route"
IGW = "aws:ec2/internetGateway:InternetGateway"
MODEL = "aws:sagemaker/model:Model"


def network(public_by: str, open_group: bool) -> tuple[list, object, object]:
    """The stack's VPC pieces: one subnet (public by `public_by`) and one group (open or VPC-only)."""
    igw = resource(IGW, {"vpcId": "vpc-1"}, "igw")
    subnet = resource(
        SUBNET,
        {"vpcId": "vpc-1", "cidrBlock": "10.0.0.0/24", "mapPublicIpOnLaunch": public_by == "mapPublicIpOnLaunch"},
        "subnet",
    )
    routes = [{"cidrBlock": "0.0.0.0/0", "gatewayId": "igw-id"}] if public_by == "routes" else []
    table = resource(ROUTE_TABLE, {"vpcId": "vpc-1", "routes": routes}, "table", dependencies=[igw])
    extra = []
    if public_by == "route":
        extra.append(
            resource(
                ROUTE,
                {
                    "routeTableId": "t",
                    "destinationCidrBlock": "0.0.0.0/0",
                    "gatewayId": "igw-id",
                    "cidrBlock": "0.0.0.0/0",
                },
                "route",
                dependencies=[table, igw],
            )
        )
    if public_by == "ipv6 route":
        extra.append(
            resource(ROUTE, {"ipv6CidrBlock": "::/0", "gatewayId": "igw-0abc"}, "route6", dependencies=[table])
        )
    association = resource(ASSOCIATION, {"subnetId": "s", "routeTableId": "t"}, "assoc", dependencies=[table, subnet])
    cidr = "0.0.0.0/0" if open_group else "10.0.0.0/16"
    group = resource(
        SG,
        {"vpcId": "vpc-1", "ingress": [{"fromPort": 8080, "toPort": 8080, "protocol": "tcp", "cidrBlocks": [cidr]}]},
        "sg",
    )
    return [igw, subnet, table, association, group, *extra], subnet, group


SAGEMAKER_FORMS = {
    MODEL: lambda: {"executionRoleArn": "r", "vpcConfig": {"subnets": ["subnet-id"], "securityGroupIds": ["sg-id"]}},
    "aws:sagemaker/notebookInstance:NotebookInstance": lambda: {"subnetId": "subnet-id", "securityGroups": ["sg-id"]},
    "aws:sagemaker/domain:Domain": lambda: {"subnetIds": ["subnet-id"], "vpcId": "vpc-1"},
}
PUBLIC_BY = ("mapPublicIpOnLaunch", "routes", "route", "ipv6 route")


def sagemaker_findings(kind: str, public_by: str, open_group: bool) -> list[str]:
    resources, subnet, group = network(public_by, open_group)
    subject = resource(kind, SAGEMAKER_FORMS[kind](), "model", dependencies=[subnet, group])
    return [message for message, _ in check_stack("sagemaker-network", [*resources, subject])]


def test_sagemaker_in_a_public_subnet_with_an_open_group_is_reported_in_every_form():
    cases = list(itertools.product(SAGEMAKER_FORMS, PUBLIC_BY))
    missed = [case for case in cases if len(sagemaker_findings(*case, open_group=True)) != 1]
    assert (len(cases), missed) == (12, [])


@pytest.mark.parametrize(("kind", "public_by"), list(itertools.product(SAGEMAKER_FORMS, ("private", *PUBLIC_BY))))
def test_sagemaker_behind_a_closed_group_or_in_a_private_subnet_passes(kind, public_by):
    assert sagemaker_findings(kind, public_by, open_group=False) == []
    if public_by == "private":
        assert sagemaker_findings(kind, public_by, open_group=True) == []


BUCKET = "aws:s3/bucketV2:BucketV2"
ACL = "aws:s3/bucketAclV2:BucketAclV2"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTHENTICATED = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"


def acl_findings(*resources) -> list[str]:
    return [m for m, _ in check_stack("data-protection", list(resources)) if "everyone" in m or "canned ACL" in m]


@pytest.mark.parametrize("uri", [ALL_USERS, AUTHENTICATED, ALL_USERS.upper(), ALL_USERS + "/", " " + AUTHENTICATED])
def test_acl_grants_to_everyone_are_reported_in_every_resource_kind(uri):
    grant_v2 = {"grantee": {"type": "Group", "uri": uri}, "permission": "READ"}
    flat = {"type": "Group", "uri": uri, "permissions": ["READ"]}
    forms = [
        resource(ACL, {"bucket": "b", "accessControlPolicy": {"grants": [grant_v2], "owner": {"id": "o"}}}, "acl"),
        resource("aws:s3/bucketAcl:BucketAcl", {"bucket": "b", "accessControlPolicy": {"grants": [grant_v2]}}, "acl"),
        resource(BUCKET, {"bucket": "b", "grants": [flat]}, "bucket"),
        resource("aws:s3/bucket:Bucket", {"bucket": "b", "grants": [flat]}, "bucket"),
        resource(
            "aws:s3/objectCopy:ObjectCopy", {"bucket": "b", "key": "k", "source": "s/k", "grants": [flat]}, "copy"
        ),
    ]
    for form in forms:
        assert len(acl_findings(form)) == 1, form.resource_type


def test_public_canned_acls_on_objects_and_outside_buckets_are_reported():
    for kind in (
        "aws:s3/bucketObjectv2:BucketObjectv2",
        "aws:s3/bucketObject:BucketObject",
        "aws:s3/objectCopy:ObjectCopy",
    ):
        assert acl_findings(resource(kind, {"bucket": "b", "key": "k", "acl": "public-read"}, "o")) == [
            f"{kind.rsplit(':', 1)[-1]} o sets the public canned ACL public-read"
        ]
    assert len(acl_findings(resource(ACL, {"bucket": "elsewhere", "acl": "authenticated-read"}, "acl"))) == 1


def test_private_acls_and_grants_to_accounts_pass():
    grant = {"grantee": {"type": "CanonicalUser", "id": "abc"}, "permission": "FULL_CONTROL"}
    log = {"grantee": {"type": "Group", "uri": "http://acs.amazonaws.com/groups/s3/LogDelivery"}, "permission": "WRITE"}
    assert acl_findings(resource(ACL, {"bucket": "b", "accessControlPolicy": {"grants": [grant, log]}}, "acl")) == []
    assert acl_findings(resource("aws:s3/bucketObjectv2:BucketObjectv2", {"bucket": "b", "acl": "private"}, "o")) == []
