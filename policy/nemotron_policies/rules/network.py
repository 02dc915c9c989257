"""network-policy-peers: every rule of a NetworkPolicy names its peers.

Kubernetes reads an ingress rule without `from` (or with `from: []`) as "every source" and an egress rule
without `to` as "every destination": one missing or emptied list turns an allow-list into allow-all on
those ports, and nothing in the object says so. An ingress peer that admits everyone (`namespaceSelector: {}`
without a narrowing `podSelector`, an `ipBlock` holding the Internet) is refused too: policies add up, so one
such rule voids every allow-list for the pods it selects. A peer naming nothing (`{}`) is refused in either
direction. Every destination of egress is written explicitly (`ipBlock: 0.0.0.0/0`). Policies without rules
(deny all) and rules with unknown peers pass.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

from ..kinds import kubernetes_objects
from ..network_policies import everyone_peer
from ..values import UNKNOWN, as_list, dig, plain

GROUP, KIND = "networking.k8s.io", "NetworkPolicy"
DIRECTIONS = (("ingress", "from", "source"), ("egress", "to", "destination"))


def _ports(rule: Any) -> str:
    ports = [f"{dig(p, 'port')}/{dig(p, 'protocol') or 'TCP'}" for p in as_list(dig(rule, "ports"))]
    return f"port {', '.join(ports)}" if ports else "every port"


def validate_network_policy_peers(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for obj in kubernetes_objects(args.resource_type, plain(args.props)):
        if obj.group != GROUP or obj.kind != KIND:
            continue
        name = f"NetworkPolicy {obj.namespace or '?'}/{obj.name or '?'}{f' ({obj.where})' if obj.where else ''}"
        for direction, peers_key, peer in DIRECTIONS:
            rules = dig(obj.body, "spec", direction)
            for index, rule in enumerate(as_list(rules)):
                peers = dig(rule, peers_key)
                if peers is UNKNOWN or any(p is UNKNOWN for p in as_list(peers)):
                    continue
                if not as_list(peers):
                    report_violation(
                        f"{name} {direction} rule {index} has no `{peers_key}` peers: it admits every {peer} on "
                        f"{_ports(rule)}; name the peers (an explicit ipBlock 0.0.0.0/0 if every {peer} is meant)",
                        None,
                    )
                for peer_index, item in enumerate(as_list(peers)):
                    why = everyone_peer(item)
                    if isinstance(why, str) and (direction == "ingress" or not item):
                        report_violation(
                            f"{name} {direction} rule {index} {peers_key}[{peer_index}] admits every {peer} on "
                            f"{_ports(rule)}: {why}; name the namespaces, pods or ranges that need it",
                            None,
                        )
