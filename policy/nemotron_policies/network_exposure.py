"""What AWS networking opens to the Internet: security-group ingress by port, and which subnets are public.

- Ingress rules come from every resource that declares them: `SecurityGroup` and `DefaultSecurityGroup`
  (`ingress[]`: `fromPort`/`toPort`/`protocol`, `cidrBlocks`, `ipv6CidrBlocks`), `SecurityGroupRule`
  (`type: ingress`) and the VPC `SecurityGroupIngressRule` (`cidrIpv4`/`cidrIpv6`, `ipProtocol`). Protocol
  `-1` / `all` is every port of every protocol; a rule holds a port when its range does.
- A set of source ranges is "the Internet" when it holds at least `world_addresses` public addresses
  (`data/admin_ports.yaml`): the ranges are merged first (so `0.0.0.0/0` given as two halves, or four
  quarters in four rules of one group, still counts) and private and reserved ranges (RFC 6890) are taken
  out; an IPv4-mapped IPv6 range (`::ffff:0:0/96`) is the IPv4 range it maps. A rule naming a prefix list
  (`prefixListId`, `prefixListIds`) of the stack (`ManagedPrefixList` entries and `ManagedPrefixListEntry`
  resources, found by the rule's dependencies) has the list's CIDRs as sources. A rule belongs to the stack's
  group it depends on, so rules written inline and as separate resources of one group are judged together.
- A subnet is public when it gives instances public addresses (`mapPublicIpOnLaunch`) or its route table
  sends Internet-bound traffic (`0.0.0.0/0`, `::/0`) to an Internet gateway (a `RouteTable` route or a `Route`,
  the table tied to the subnet by a `RouteTableAssociation`).
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import yaml

from .values import UNKNOWN, as_list, dig, text

DATA = yaml.safe_load((Path(__file__).resolve().parent / "data" / "admin_ports.yaml").read_text())
WORLD_ADDRESSES: dict[int, int] = {int(k): int(v) for k, v in DATA["world_addresses"].items()}
Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
# RFC 6890 special-purpose ranges (private, shared, loopback, link-local, documentation, multicast, reserved).
SPECIAL_PURPOSE = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/3",
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
        "2001:db8::/32",
        "::/128",
        "::1/128",
    )
]
IPV4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
EVERY_PROTOCOL = frozenset({"-1", "all"})
PROTOCOL_NUMBERS = {"6": "tcp", "17": "udp", "1": "icmp", "58": "icmpv6"}
SECURITY_GROUPS = frozenset(
    {"aws:ec2/securityGroup:SecurityGroup", "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"}
)
SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SUBNET = "aws:ec2/subnet:Subnet"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ROUTE = "aws:ec2/route:Route"
ROUTE_TABLE_ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
INTERNET_GATEWAY = "aws:ec2/internetGateway:InternetGateway"
PREFIX_LIST = "aws:ec2/managedPrefixList:ManagedPrefixList"
PREFIX_LIST_ENTRY = "aws:ec2/managedPrefixListEntry:ManagedPrefixListEntry"
WORLD_DESTINATIONS = frozenset({"0.0.0.0/0", "::/0"})


@dataclass(frozen=True)
class AdminPort:
    low: int
    high: int
    protocol: str
    name: str
    source: str


ADMIN_PORTS = [
    AdminPort(int(p["from"]), int(p["to"]), str(p["protocol"]), str(p["name"]), str(p["source"])) for p in DATA["ports"]
]


def _network(cidr: str) -> Network | None:
    try:
        network = ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError:
        return None
    if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(IPV4_MAPPED):
        mapped = network.network_address.ipv4_mapped
        return ipaddress.ip_network(f"{mapped}/{max(network.prefixlen - 96, 0)}", strict=False) if mapped else None
    return network


def public_addresses(cidrs: Iterable[Any]) -> Any:
    """{IP version: public addresses the ranges hold together}; `UNKNOWN` if a range is unknown."""
    networks: dict[int, list[Network]] = {4: [], 6: []}
    for cidr in cidrs:
        if cidr is UNKNOWN:
            return UNKNOWN
        network = _network(cidr) if isinstance(cidr, str) else None
        if network is not None:
            networks[network.version].append(network)
    counts = {}
    for version, listed in networks.items():
        merged = list(ipaddress.collapse_addresses(listed))  # type: ignore[type-var]
        total = sum(n.num_addresses for n in merged)
        for special in SPECIAL_PURPOSE:
            if special.version == version:
                total -= sum(min(n.num_addresses, special.num_addresses) for n in merged if n.overlaps(special))
        counts[version] = total
    return counts


def world_range(cidrs: Union[str, Iterable[Any]]) -> Any:
    """Do these ranges (one CIDR or several) hold the Internet? `UNKNOWN` if a range is unknown."""
    counts = public_addresses([cidrs] if isinstance(cidrs, str) else cidrs)
    if counts is UNKNOWN:
        return UNKNOWN
    return any(counts[version] >= WORLD_ADDRESSES[version] for version in counts)


def _outside(part: Network, hole: Network) -> list[Network]:
    if hole.subnet_of(part):  # type: ignore[arg-type]
        return list(part.address_exclude(hole))  # type: ignore[arg-type]
    return [] if part.subnet_of(hole) else [part]  # type: ignore[arg-type]


def public_share_outside(cidr: str, excepts: Iterable[Any]) -> Any:
    """The share of the public addresses (of its IP version) that `cidr` holds outside the `except` ranges of a
    NetworkPolicy ipBlock; `UNKNOWN` if a range is unknown, None if `cidr` does not parse."""
    network = _network(cidr)
    if network is None:
        return None
    remaining = [network]
    for except_range in excepts:
        if except_range is UNKNOWN:
            return UNKNOWN
        hole = _network(except_range) if isinstance(except_range, str) else None
        if hole is None or hole.version != network.version:
            continue
        remaining = [piece for part in remaining for piece in _outside(part, hole)]
    counts = public_addresses([str(part) for part in remaining])
    return counts[network.version] / WORLD_ADDRESSES[network.version]


@dataclass(frozen=True)
class Ingress:
    """One ingress rule: the group it opens (a key shared by the rules of one group), ports, sources."""

    group: str
    where: str
    protocol: Any
    low: Any
    high: Any
    cidrs: tuple[Any, ...]

    def holds(self, port: AdminPort) -> Any:
        protocol = str(self.protocol).lower() if self.protocol is not UNKNOWN else UNKNOWN
        if UNKNOWN in (protocol, self.low, self.high):
            return UNKNOWN
        protocol = PROTOCOL_NUMBERS.get(protocol, protocol)
        if protocol in EVERY_PROTOCOL:
            return True
        if protocol != port.protocol:
            return False
        low, high = _port(self.low, 0), _port(self.high, 65535)
        return low <= port.high and high >= port.low


def _port(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _listed(value: Any) -> tuple[Any, ...]:
    return (UNKNOWN,) if value is UNKNOWN else tuple(as_list(value))


def ingress_rules(resource: Any, props: Any) -> Iterator[Ingress]:
    """The ingress rules a resource declares (none for other resources)."""
    kind = resource.resource_type
    if kind in SECURITY_GROUPS:
        for index, rule in enumerate(as_list(dig(props, "ingress"))):
            cidrs = _listed(dig(rule, "cidrBlocks")) + _listed(dig(rule, "ipv6CidrBlocks"))
            yield Ingress(
                resource.urn,
                f"security group {resource.name} ingress[{index}]",
                dig(rule, "protocol"),
                dig(rule, "fromPort"),
                dig(rule, "toPort"),
                cidrs,
            )
    elif kind == SECURITY_GROUP_RULE and dig(props, "type") in ("ingress", UNKNOWN):
        cidrs = _listed(dig(props, "cidrBlocks")) + _listed(dig(props, "ipv6CidrBlocks"))
        group = dig(props, "securityGroupId")
        yield Ingress(
            text(group) or resource.urn,
            f"security group rule {resource.name}",
            dig(props, "protocol"),
            dig(props, "fromPort"),
            dig(props, "toPort"),
            cidrs,
        )
    elif kind == INGRESS_RULE:
        cidrs = tuple(c for c in (dig(props, "cidrIpv4"), dig(props, "cidrIpv6")) if c is not None)
        group = dig(props, "securityGroupId")
        yield Ingress(
            text(group) or resource.urn,
            f"security group ingress rule {resource.name}",
            dig(props, "ipProtocol"),
            dig(props, "fromPort"),
            dig(props, "toPort"),
            cidrs,
        )


def open_admin_ports(rules: list[Ingress]) -> Iterator[tuple[Ingress, AdminPort]]:
    """(rule, port) for each admin port the rules of one group open to the Internet: the sources of every rule
    of the group that holds the port are merged before they are judged."""
    for port in ADMIN_PORTS:
        holding = [r for r in rules if r.holds(port) is True]
        sources = [c for r in holding for c in r.cidrs]
        if holding and world_range(sources) is True:
            yield holding[0], port


def _world_bound_gateways(routes: list[Any]) -> list[Any]:
    return [
        dig(r, "gatewayId")
        for r in routes
        if (dig(r, "cidrBlock") in WORLD_DESTINATIONS or dig(r, "ipv6CidrBlock") in WORLD_DESTINATIONS)
        and dig(r, "gatewayId") not in (None, UNKNOWN)
    ]


def public_subnets(resources: list[tuple[Any, Any]]) -> set[str]:
    """URNs of the stack's subnets that are public."""
    gateways = {r.urn for r, _ in resources if r.resource_type == INTERNET_GATEWAY}

    def to_internet(resource: Any, gateway_ids: list[Any]) -> bool:
        by_dependency = gateways & {d.urn for d in resource.dependencies}
        return bool(gateway_ids) and (
            bool(by_dependency) or any(isinstance(g, str) and g.startswith("igw-") for g in gateway_ids)
        )

    tables = {
        r.urn
        for r, p in resources
        if r.resource_type == ROUTE_TABLE and to_internet(r, _world_bound_gateways(as_list(dig(p, "routes"))))
    }
    tables |= {
        d.urn
        for r, p in resources
        if r.resource_type == ROUTE and to_internet(r, _world_bound_gateways([p]))
        for d in r.dependencies
        if d.resource_type == ROUTE_TABLE
    }
    public = {r.urn for r, p in resources if r.resource_type == SUBNET and dig(p, "mapPublicIpOnLaunch") is True}
    for resource, _ in resources:
        if resource.resource_type == ROUTE_TABLE_ASSOCIATION:
            linked = {d.urn: d.resource_type for d in resource.dependencies}
            if tables & set(linked):
                public |= {urn for urn, kind in linked.items() if kind == SUBNET}
    return public


def _prefix_list_cidrs(resources: list[tuple[Any, Any]]) -> dict[str, list[Any]]:
    """CIDRs of the stack's managed prefix lists, by the list's URN."""
    cidrs: dict[str, list[Any]] = defaultdict(list)
    for resource, props in resources:
        if resource.resource_type == PREFIX_LIST:
            cidrs[resource.urn] += [dig(e, "cidr") for e in as_list(dig(props, "entries"))]
        elif resource.resource_type == PREFIX_LIST_ENTRY:
            for dependency in resource.dependencies:
                if dependency.resource_type == PREFIX_LIST:
                    cidrs[dependency.urn].append(dig(props, "cidr"))
    return cidrs


def _names_prefix_list(resource: Any, props: Any) -> bool:
    if resource.resource_type in SECURITY_GROUPS:
        return any(as_list(dig(r, "prefixListIds")) for r in as_list(dig(props, "ingress")))
    return bool(dig(props, "prefixListId") or as_list(dig(props, "prefixListIds")))


def ingress_by_group(resources: list[tuple[Any, Any]]) -> dict[str, list[Ingress]]:
    """Ingress rules by the group they open: a rule resource belongs to the stack's group it depends on (its
    `securityGroupId` may be unknown, or an id the group's own inputs do not hold), else to its `securityGroupId`."""
    groups: dict[str, list[Ingress]] = defaultdict(list)
    prefix_lists = _prefix_list_cidrs(resources) if any(r.resource_type == PREFIX_LIST for r, _ in resources) else {}
    for resource, props in resources:
        group_urns = [d.urn for d in resource.dependencies if d.resource_type in SECURITY_GROUPS]
        listed = (
            [c for d in resource.dependencies for c in prefix_lists.get(d.urn, [])]
            if prefix_lists and _names_prefix_list(resource, props)
            else []
        )
        for rule in ingress_rules(resource, props):
            key = group_urns[0] if len(group_urns) == 1 or (group_urns and rule.group == resource.urn) else rule.group
            if listed:
                rule = Ingress(rule.group, rule.where, rule.protocol, rule.low, rule.high, rule.cidrs + tuple(listed))
            groups[key].append(rule)
    return groups


def open_groups(resources: list[tuple[Any, Any]]) -> set[str]:
    """Keys (URNs for the stack's groups) of security groups with ingress from the Internet on any port."""
    return {
        group
        for group, rules in ingress_by_group(resources).items()
        if world_range([c for r in rules for c in r.cidrs]) is True
    }
