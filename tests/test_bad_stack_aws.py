"""Bad AWS settings in the committed prod stack: malformed CIDRs, zones of another Region, Regions that do
not exist, `aws:region` against `aws.region`, reserved and oversized tags, wrong enums and unknown keys at
several depths. Zones and Regions come from catalog/aws_regions.yaml, not from literals."""

from __future__ import annotations

import pytest
from bad_stack_helpers import DELETE, ThrowawayProject, assert_refused, config_value, edited

from serving_stack.facts.aws import load_aws_regions

REGIONS = load_aws_regions()
REGION = config_value("prod", "aws.region")
OTHER_REGION = next(code for code in sorted(REGIONS.regions) if code != REGION)
OTHER_AZ = REGIONS.availability_zones(OTHER_REGION)[0]
LOCAL_ZONE = next(iter(REGIONS.local_zones(REGION)), None)
UNKNOWN_REGION = next(f"{REGION[:-1]}{n}" for n in range(9, 0, -1) if f"{REGION[:-1]}{n}" not in REGIONS.regions)
AZS = "aws.cluster.create.availabilityZones"
ENTRIES = "aws.cluster.create.accessEntries"
ONCALL = config_value("prod", f"{ENTRIES}[0]")
EXISTING = {
    "existing": {
        "name": "nemo",
        "vpcId": "vpc-0123456789abcdef0",
        "privateSubnetIds": {"us-east-1a": "subnet-0123456789abcdef0"},
        "nodeSecurityGroupIds": ["sg-0123456789abcdef0"],
    }
}

CASES: dict[str, tuple[dict, str]] = {
    # CIDRs are parsed: the error is a config error, never a traceback.
    "VPC CIDR prefix out of range": ({"aws.cluster.create.vpcCidr": "10.0.0.0/33"}, "aws.cluster.create.vpcCidr"),
    "VPC CIDR with three octets": ({"aws.cluster.create.vpcCidr": "10.0.0/16"}, "aws.cluster.create.vpcCidr"),
    "VPC CIDR of words": ({"aws.cluster.create.vpcCidr": "my-vpc"}, "aws.cluster.create.vpcCidr"),
    "VPC CIDR without a prefix": ({"aws.cluster.create.vpcCidr": "10.40.0.0"}, "aws.cluster.create.vpcCidr"),
    "VPC CIDR too large a network": ({"aws.cluster.create.vpcCidr": "10.0.0.0/8"}, "aws.cluster.create.vpcCidr"),
    "endpoint CIDR with an octet over 255": (
        {"aws.cluster.create.endpointPublicAccessCidrs": ["300.1.1.1/24"]},
        "aws.cluster.create.endpointPublicAccessCidrs[0]",
    ),
    "endpoint CIDR IPv6": (
        {"aws.cluster.create.endpointPublicAccessCidrs": ["2001:db8::/32"]},
        "aws.cluster.create.endpointPublicAccessCidrs[0]",
    ),
    "endpoint open to the internet": (
        {"aws.cluster.create.endpointPublicAccessCidrs": ["203.0.113.0/24", "0.0.0.0/0"]},
        "aws.cluster.create.endpointPublicAccessCidrs[1]",
    ),
    "VPC CIDR with host bits": ({"aws.cluster.create.vpcCidr": "10.40.1.0/16"}, "aws.cluster.create.vpcCidr"),
    # Zones of another Region, Regions that do not exist, one Region for the stack.
    "cluster AZ of another Region": ({f"{AZS}[1]": OTHER_AZ}, f"{AZS}[1]"),
    "pool AZ of another Region": ({"aws.nodePools[0].availabilityZone": OTHER_AZ}, "aws.nodePools[0].availabilityZone"),
    "FSx AZ of another Region": (
        {"aws.modelCacheStorage.fsx.availabilityZone": OTHER_AZ},
        "aws.modelCacheStorage.fsx.availabilityZone",
    ),
    "a Region that does not exist": ({"aws.region": UNKNOWN_REGION, "aws:region": DELETE}, "aws.region"),
    "a Region that is not a Region name": ({"aws.region": "virginia"}, "aws.region"),
    "aws:region disagrees with aws.region": ({"aws:region": OTHER_REGION}, "aws.region"),
    "aws:region does not exist": ({"aws:region": UNKNOWN_REGION}, "aws:region"),
    "SageMaker Region that does not exist": ({"sagemaker.region": UNKNOWN_REGION}, "sagemaker.region"),
    "cluster AZ listed twice": ({AZS: [REGIONS.availability_zones(REGION)[0]] * 2}, f"{AZS}[1]"),
    # One access entry per principal (EKS CreateAccessEntry refuses a second).
    "access entry listed twice": (
        {ENTRIES: [ONCALL, {**ONCALL, "accessPolicy": "Edit"}]},
        f"{ENTRIES}[1].principalArn",
    ),
    # EKS cluster names: 1-100 of letters, digits, '-' and '_', starting with a letter or digit.
    "existing cluster name with a space and a control character": (
        {"aws.cluster": {"existing": {**EXISTING["existing"], "name": "my cluster\x07"}}},
        "aws.cluster.existing.name",
    ),
    "existing cluster name of 101 characters": (
        {"aws.cluster": {"existing": {**EXISTING["existing"], "name": "c" * 101}}},
        "aws.cluster.existing.name",
    ),
    "existing cluster name starting with '-'": (
        {"aws.cluster": {"existing": {**EXISTING["existing"], "name": "-nemo"}}},
        "aws.cluster.existing.name",
    ),
    # Tags.
    "reserved tag key": ({"aws.tags.aws:createdBy": "me"}, "aws.tags.aws:createdBy"),
    "reserved tag key in capitals": ({"aws.tags.AWS:team": "x"}, "aws.tags.AWS:team"),
    "tag key over 128 characters": ({"aws.tags": {"k" * 129: "v"}}, "aws.tags." + "k" * 57 + "..."),
    "empty tag key": ({"aws.tags": {"": "v"}}, "aws.tags.''"),
    "tag value over 256 characters": ({"aws.tags.owner": "o" * 257}, "aws.tags.owner"),
    "41 tags": ({"aws.tags": {f"t{i}": "v" for i in range(41)}}, "aws.tags"),
    "tag value with a control character": ({"aws.tags.owner": "a\x07b"}, "aws.tags.owner"),
    "tag value with a newline": ({"aws.tags.owner": "team\n"}, "aws.tags.owner"),
    "tag key with a newline": ({"aws.tags": {"team\nx": "v"}}, "aws.tags.'team\\nx'"),
    "tag key with a character AWS refuses": ({"aws.tags": {"team#1": "v"}}, "aws.tags.team#1"),
    "tag value a number": ({"aws.tags.cost-center": 1234}, "aws.tags.cost-center"),
    # System node group: EC2 instance type names (family.size), at most 20 (EKS CreateNodegroup), EBS gp3 disks.
    "system instance type empty": ({"aws.systemNodeGroup.instanceTypes": [""]}, "aws.systemNodeGroup.instanceTypes[0]"),
    "system instance type not family.size": (
        {"aws.systemNodeGroup.instanceTypes": ["m7i.2xlarge", "banana"]},
        "aws.systemNodeGroup.instanceTypes[1]",
    ),
    "system instance type with a trailing newline": (
        {"aws.systemNodeGroup.instanceTypes": ["m7i.2xlarge\n"]},
        "aws.systemNodeGroup.instanceTypes[0]",
    ),
    "21 system instance types": (
        {"aws.systemNodeGroup.instanceTypes": ["m7i.2xlarge"] * 21},
        "aws.systemNodeGroup.instanceTypes",
    ),
    "system disk over the EBS gp3 maximum": (
        {"aws.systemNodeGroup.diskSizeGiB": 16385},
        "aws.systemNodeGroup.diskSizeGiB",
    ),
    # Node counts: EKS NodegroupScalingConfig holds int32s.
    "system maxSize over int32": ({"aws.systemNodeGroup.maxSize": 2**31}, "aws.systemNodeGroup.maxSize"),
    "system minSize of 10^30": ({"aws.systemNodeGroup.minSize": 10**30}, "aws.systemNodeGroup.minSize"),
    "system desiredSize over int32": ({"aws.systemNodeGroup.desiredSize": 2**31}, "aws.systemNodeGroup.desiredSize"),
    "pool maxSize of 10^30": ({"aws.nodePools[0].maxSize": 10**30}, "aws.nodePools[0].maxSize"),
    "pool minSize over int32": ({"aws.nodePools[0].minSize": 2**31}, "aws.nodePools[0].minSize"),
    "pool desiredSize over int32": ({"aws.nodePools[1].desiredSize": 2**31}, "aws.nodePools[1].desiredSize"),
    "unmanaged pool of 73 GPUs a node": (
        {
            "aws.nodePools": [
                {
                    "name": "onprem",
                    "managed": False,
                    "nodeFacts": {"gpu": "h200", "gpus": 73},
                    "desiredSize": 1,
                    "maxSize": 1,
                }
            ]
        },
        "aws.nodePools[0].nodeFacts.gpus",
    ),
    # Wrong enums.
    "capacity type unknown": ({"aws.nodePools[0].capacityType": "reserved"}, "aws.nodePools[0].capacityType"),
    "storage backend unknown": ({"aws.modelCacheStorage.backend": "s3"}, "aws.modelCacheStorage.backend"),
    "FSx throughput not offered": (
        {"aws.modelCacheStorage.fsx.perUnitStorageThroughput": 300},
        "aws.modelCacheStorage.fsx.perUnitStorageThroughput",
    ),
    "log retention not offered": (
        {"aws.cluster.create.controlPlaneLogRetentionDays": 5},
        "aws.cluster.create.controlPlaneLogRetentionDays",
    ),
    "access policy unknown": (
        {"aws.cluster.create.accessEntries[0].accessPolicy": "Root"},
        "aws.cluster.create.accessEntries[0].accessPolicy",
    ),
    "fabric unknown": ({"aws.nodePools[1].fabric": "nvlink"}, "aws.nodePools[1].fabric"),
    # Unknown keys at several depths.
    "unknown key in aws": ({"aws.vpc": {}}, "aws.vpc"),
    "unknown key in the cluster": ({"aws.cluster.create.vpcCidrs": ["10.0.0.0/16"]}, "aws.cluster.create.vpcCidrs"),
    "unknown key in a pool": ({"aws.nodePools[1].instancetype": "p5.48xlarge"}, "aws.nodePools[1].instancetype"),
    "unknown key in FSx settings": (
        {"aws.modelCacheStorage.fsx.throughput": 500},
        "aws.modelCacheStorage.fsx.throughput",
    ),
    "unknown key in an access entry": (
        {"aws.cluster.create.accessEntries[0].role": "x"},
        "aws.cluster.create.accessEntries[0].role",
    ),
}
if LOCAL_ZONE:
    CASES["cluster AZ a Local Zone"] = ({f"{AZS}[2]": LOCAL_ZONE}, f"{AZS}[2]")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return ThrowawayProject(tmp_path_factory.mktemp("bad-aws"))


@pytest.mark.parametrize("case", list(CASES))
def test_bad_aws_setting_is_refused(project, case):
    edits, key = CASES[case]
    assert_refused(project, edited("prod", edits), key)


def test_the_one_region_message_says_which_region_to_use(project):
    line = assert_refused(project, edited("prod", {"aws:region": OTHER_REGION}), "aws.region")
    assert line.endswith(f"; allowed: {OTHER_REGION}")
    assert f"'{REGION}'" in line


def test_a_stack_without_an_aws_block_may_set_any_known_region(project):
    """`aws:region` alone (dev) is the SageMaker default Region: checked to exist, nothing to agree with."""
    assert project.render(edited("dev", {"aws:region": OTHER_REGION})).code == 0
