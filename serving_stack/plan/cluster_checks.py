"""Every problem of the `aws` cluster and system node group blocks, each with its key path: how the
cluster is sourced, its endpoint and VPC ranges, the Kubernetes version the Dynamo platform needs, and the
stack's Region. The node pools' checks are `pool_checks`."""

from __future__ import annotations

import functools
import ipaddress

import botocore
import botocore.session

from serving_stack.config.aws import AwsConfig
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.name_limits import load_name_limits
from serving_stack.plan.quantities import version_tuple
from serving_stack.plan.zones import check_region


def check_cluster(config: StackConfig, aws: AwsConfig, facts: Facts) -> list[ConfigError]:
    errors: list[ConfigError] = []
    source = config.kubernetes.cluster.source
    create = aws.cluster.create if aws.cluster else None
    if source == "eks" and create is None:
        errors.append(ConfigError("aws.cluster.create", "required when kubernetes.cluster.source is eks"))
    if create and source != "eks":
        errors.append(ConfigError("kubernetes.cluster.source", "must be eks when aws.cluster.create is set", "eks"))
    if create:
        errors += _check_public_access_cidrs(create.endpointPublicAccessCidrs)
        errors += _repeated("aws.cluster.create.availabilityZones", create.availabilityZones, "zone")
        errors += _repeated(
            "aws.cluster.create.accessEntries",
            [entry.principalArn for entry in create.accessEntries],
            "principal (EKS allows one access entry per principal)",
            ".principalArn",
        )
        if not 16 <= ipaddress.ip_network(create.vpcCidr, strict=False).prefixlen <= 20:
            errors.append(ConfigError("aws.cluster.create.vpcCidr", f"{create.vpcCidr} is not a /16../20 network"))
        minimum = facts.platform.chart.minKubernetes
        if version_tuple(create.kubernetesVersion) < version_tuple(minimum):
            errors.append(
                ConfigError(
                    "aws.cluster.create.kubernetesVersion",
                    f"the Dynamo platform needs Kubernetes >= {minimum}, got {create.kubernetesVersion}",
                )
            )
    system = aws.systemNodeGroup
    errors += check_system_instance_types(system.instanceTypes, facts)
    if not system.minSize <= system.desiredSize <= system.maxSize:
        errors.append(
            ConfigError(
                "aws.systemNodeGroup.desiredSize",
                f"{system.desiredSize} is not between minSize {system.minSize} and maxSize {system.maxSize}",
            )
        )
    return errors + check_region(aws, facts.aws.regions)


@functools.cache
def ec2_instance_types() -> frozenset[str]:
    """Every EC2 instance type the pinned botocore's EC2 API model names (its `InstanceType` enum)."""
    return frozenset(botocore.session.get_session().get_service_model("ec2").shape_for("InstanceType").enum)


def check_system_instance_types(instance_types: list[str], facts: Facts) -> list[ConfigError]:
    """Each type exists (EC2's own list, from botocore) and one node group holds one architecture: EKS
    launches a node group with one AMI, x86_64 or arm64."""
    errors = []
    known = ec2_instance_types()
    graviton = load_name_limits().gravitonFamilies
    arches: dict[str, int] = {}
    for index, name in enumerate(instance_types):
        if name not in known:
            errors.append(
                ConfigError(
                    f"aws.systemNodeGroup.instanceTypes[{index}]",
                    f"{bounded(name)} is not an EC2 instance type (botocore {botocore.__version__}'s EC2 model)",
                )
            )
            continue
        gpu = facts.aws.instance_types.get(name)
        arch = gpu.arch if gpu is not None else ("arm64" if graviton.arm64(name) else "x86_64")
        first = arches.setdefault(arch, index)
        if len(arches) > 1 and first == index:
            other = next(a for a in arches if a != arch)
            errors.append(
                ConfigError(
                    f"aws.systemNodeGroup.instanceTypes[{index}]",
                    f"{name} is {arch} but instanceTypes[{arches[other]}] is {other}: one node group runs one AMI",
                    f"{other} types only",
                )
            )
    return errors


def _repeated(path: str, values: list[str], what: str, suffix: str = "") -> list[ConfigError]:
    """A value listed twice, named at its second index."""
    errors = []
    for index, value in enumerate(values):
        if value in values[:index]:
            first = values.index(value)
            errors.append(ConfigError(f"{path}[{index}]{suffix}", f"the same {what} as [{first}]: {bounded(value)}"))
    return errors


def _check_public_access_cidrs(cidrs: list[str]) -> list[ConfigError]:
    """The public endpoint's allow-list: not the whole Internet, public ranges only, within EKS's count."""
    limits = load_name_limits().eksPublicAccessCidrs
    key = "aws.cluster.create.endpointPublicAccessCidrs"
    errors = []
    if len(cidrs) > limits.maxEntries:
        errors.append(ConfigError(key, f"{len(cidrs)} ranges; EKS takes at most {limits.maxEntries} ({limits.source})"))
    for index, cidr in enumerate(cidrs):
        special = limits.non_public(cidr)
        if ipaddress.ip_network(cidr, strict=False).prefixlen == 0:
            errors.append(
                ConfigError(
                    f"{key}[{index}]",
                    f"{cidr} opens the API endpoint to the internet",
                    "specific CIDRs, or [] for a private endpoint",
                )
            )
        elif special is not None:
            errors.append(
                ConfigError(
                    f"{key}[{index}]",
                    f"{cidr} is inside {special}, which no caller of a public endpoint comes from "
                    f"({limits.nonPublicSource})",
                    "public ranges; private networks reach the cluster through its private endpoint",
                )
            )
    return errors
