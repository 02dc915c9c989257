"""network-policy-types: a NetworkPolicy's `policyTypes` cover every direction it has rules for.

When `policyTypes` is given, Kubernetes ignores the rules of a direction it does not list, and does not
isolate that direction: `policyTypes: [Egress]` beside an `ingress` allow-list leaves ingress open to every
source while the object reads as restricted. Policies whose policyTypes are unknown pass.
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from ..network_policies import DIRECTIONS, isolated_directions, network_policies
from ..values import UNKNOWN, dig, plain


def validate_network_policy_types(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for obj in network_policies(args.resource_type, plain(args.props)):
        directions = isolated_directions(obj.body)
        if directions is UNKNOWN:
            continue
        for direction in DIRECTIONS:
            rules = dig(obj.body, "spec", direction.lower())
            if rules is not None and direction not in directions:
                name = f"NetworkPolicy {obj.namespace or '?'}/{obj.name or '?'}{f' ({obj.where})' if obj.where else ''}"
                report_violation(
                    f"{name} has {direction.lower()} rules but policyTypes {sorted(directions)} leaves {direction} "
                    f"out: the rules are ignored and {direction.lower()} is not restricted; add {direction}",
                    None,
                )
