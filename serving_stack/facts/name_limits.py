"""Loads `catalog/name_limits.yaml`: the limits of derived Kubernetes and AWS names, each with its source,
which EC2 instance type names run on Graviton, what the EKS public endpoint's allow-list may hold, and the
addresses a node takes from its subnet on the VPC CNI."""

from __future__ import annotations

import functools
import ipaddress
import re
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.facts.strict_files import DATA_DIR, Data, load_model


class Limit(Data):
    maxLength: int = pydantic.Field(gt=0)
    source: str = pydantic.Field(min_length=10)


class PatternLimit(Limit):
    pattern: str


class Suffix(Data):
    length: int = pydantic.Field(gt=0)
    source: str = pydantic.Field(min_length=10)


class ReservedNamespaces(Data):
    names: tuple[str, ...] = pydantic.Field(min_length=1)
    reservedPrefix: str
    source: str = pydantic.Field(min_length=10)

    def reserved(self, namespace: str) -> bool:
        return namespace in self.names or namespace.startswith(self.reservedPrefix)


class GravitonFamilies(Data):
    pattern: str
    source: str = pydantic.Field(min_length=10)

    def arm64(self, instance_type: str) -> bool:
        return re.fullmatch(self.pattern, instance_type) is not None


class PublicCidrLimits(Data):
    maxEntries: int = pydantic.Field(gt=0)
    source: str = pydantic.Field(min_length=10)
    nonPublic: tuple[str, ...] = pydantic.Field(min_length=1)
    nonPublicSource: str = pydantic.Field(min_length=10)

    def non_public(self, cidr: str) -> Optional[str]:
        """The special-purpose range that holds all of `cidr` (an IPv4 range, as config `Cidr`), or None."""
        network = ipaddress.IPv4Network(cidr, strict=False)
        return next((s for s in self.nonPublic if network.subnet_of(ipaddress.IPv4Network(s))), None)


class NodeAddresses(Data):
    enis: int = pydantic.Field(gt=0)
    ipv4PerEni: int = pydantic.Field(gt=0)


class PodAddresses(Data):
    """What a subnet holds: `enis` x `ipv4PerEni` per node of a listed type, `subnetReserved` AWS keeps and
    `eksInterfaces` of the control plane; `unlisted`: known types without published limits (not checked)."""

    perNodeSource: str = pydantic.Field(min_length=10)
    subnetReserved: int = pydantic.Field(ge=0)
    subnetReservedSource: str = pydantic.Field(min_length=10)
    eksInterfaces: int = pydantic.Field(ge=0)
    eksInterfacesSource: str = pydantic.Field(min_length=10)
    source: str = pydantic.Field(min_length=10)
    instanceTypes: dict[str, NodeAddresses] = pydantic.Field(min_length=1)
    unlisted: dict[str, str]

    def per_node(self, instance_type: str) -> Optional[int]:
        limits = self.instanceTypes.get(instance_type)
        return limits.enis * limits.ipv4PerEni if limits else None


class PathLimit(Limit):
    """A path the stack makes below a configured base: `derivedSuffixLength` characters and one directory more."""

    maxDepth: int = pydantic.Field(gt=0)
    derivedSuffixLength: int = pydantic.Field(ge=0)


class NameLimits(Data):
    schemaVersion: Literal[1]
    reservedNamespaces: ReservedNamespaces
    serviceName: PatternLimit
    helmReleaseName: Limit
    eksNodegroupName: Limit
    namePrefixSuffix: Suffix
    iamRoleName: Limit
    autonameSuffix: Suffix
    gravitonFamilies: GravitonFamilies
    eksPublicAccessCidrs: PublicCidrLimits
    efsAccessPointPath: PathLimit
    podAddresses: PodAddresses


@functools.cache
def load_name_limits(root: Path = DATA_DIR) -> NameLimits:
    return load_model(root / "name_limits.yaml", NameLimits)
