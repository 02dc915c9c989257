"""admin-ports-closed: no security group opens an administration or data-store port to the Internet.

The ports are data (`data/admin_ports.yaml`: CIS AWS Foundations 5.2-5.4, AWS Security Hub EC2.19, the
Kubernetes control-plane and kubelet ports), each with its source. A rule counts wherever it sits (inline in
the group, a `SecurityGroupRule`, a VPC `SecurityGroupIngressRule`), whether it names the port, a range or a
protocol holding it (`-1`, `all`, protocol numbers), and whatever way it writes the Internet (`0.0.0.0/0`,
`::/0`, an IPv4-mapped `::ffff:0:0/96`, pieces of them): the rules of one group are judged together
(`network_exposure`).
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, StackValidationArgs

from ..network_exposure import ingress_by_group, open_admin_ports
from ..values import plain


def validate_admin_ports_closed(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    resources = [(r, plain(r.props)) for r in args.resources]
    urns = {r.urn for r, _ in resources}
    for group, rules in ingress_by_group(resources).items():
        for rule, port in open_admin_ports(rules):
            ports = str(port.low) if port.low == port.high else f"{port.low}-{port.high}"
            sources = ", ".join(str(c) for r in rules if r.holds(port) is True for c in r.cidrs)
            report_violation(
                f"{rule.where} opens {port.name} ({ports}/{port.protocol}) to the Internet ({sources}); allow a "
                f"bastion, VPN or VPC range instead (source: {port.source}, policy/nemotron_policies/data/"
                "admin_ports.yaml)",
                group if group in urns else None,
            )
