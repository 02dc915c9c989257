"""admin-ports-closed and sagemaker-network: nothing the stack creates is reachable from the Internet where it
should not be.

- admin-ports-closed: no security group opens an administration or data-store port (`data/admin_ports.yaml`:
  CIS AWS Foundations 5.2-5.4, AWS Security Hub EC2.19, the Kubernetes control-plane and kubelet ports) to
  the Internet, whether the rule sits inline in the group, in a `SecurityGroupRule` or in a VPC
  `SecurityGroupIngressRule`, names the port or a range or protocol holding it, and gives `0.0.0.0/0`,
  `::/0`, an IPv4-mapped `::ffff:0:0/96` or pieces of them (`network_exposure`). Rules of one group are
  judged together (the group is their `securityGroupId`).
- sagemaker-network: a SageMaker model, notebook instance or domain placed in the stack's VPC sits in no
  public subnet with a security group open to the Internet (any port): SageMaker attaches its ENIs there, so
  the container would be one security group away from the Internet. Subnets and groups are the stack's
  resources the SageMaker resource depends on (its `vpcConfig` / `subnetId` / `subnetIds` take their ids);
  ids of resources outside the stack cannot be judged.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from ..network_exposure import (
    SECURITY_GROUPS,
    Ingress,
    ingress_rules,
    open_admin_ports,
    public_subnets,
    world_range,
)
from ..values import plain

# SageMaker resources that put ENIs into the stack's subnets.
SAGEMAKER_IN_VPC = frozenset(
    {
        "aws:sagemaker/model:Model",
        "aws:sagemaker/notebookInstance:NotebookInstance",
        "aws:sagemaker/domain:Domain",
    }
)


def _groups(resources: list[tuple[Any, Any]]) -> dict[str, list[Ingress]]:
    """Ingress rules by the group they open: a rule resource belongs to the group it depends on when its
    `securityGroupId` is not known yet."""
    groups: dict[str, list[Ingress]] = defaultdict(list)
    for resource, props in resources:
        group_urns = [d.urn for d in resource.dependencies if d.resource_type in SECURITY_GROUPS]
        for rule in ingress_rules(resource, props):
            key = rule.group if rule.group != resource.urn or not group_urns else group_urns[0]
            groups[key].append(rule)
    return groups


def validate_admin_ports_closed(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    resources = [(r, plain(r.props)) for r in args.resources]
    urns = {r.urn for r, _ in resources}
    for group, rules in _groups(resources).items():
        for rule, port in open_admin_ports(rules):
            ports = str(port.low) if port.low == port.high else f"{port.low}-{port.high}"
            report_violation(
                f"{rule.where} opens {port.name} ({ports}/{port.protocol}) to the Internet "
                f"({', '.join(str(c) for r in rules if r.holds(port) is True for c in r.cidrs)}); "
                "allow a bastion, VPN or VPC range instead (source: "
                f"{port.source}, policy/nemotron_policies/data/admin_ports.yaml)",
                group if group in urns else None,
            )


def _open_groups(resources: list[tuple[Any, Any]]) -> set[str]:
    """URNs of the stack's security groups with ingress from the Internet on any port."""
    found = set()
    for group, rules in _groups(resources).items():
        if world_range([c for r in rules for c in r.cidrs]) is True:
            found.add(group)
    return found


def validate_sagemaker_network(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    resources = [(r, plain(r.props)) for r in args.resources]
    public = public_subnets(resources)
    open_groups = _open_groups(resources)
    for resource, _ in resources:
        if resource.resource_type not in SAGEMAKER_IN_VPC:
            continue
        linked = {d.urn: d for d in resource.dependencies}
        subnets = sorted(linked[u].name for u in public & set(linked))
        groups = sorted(linked[u].name for u in open_groups & set(linked))
        if subnets and groups:
            report_violation(
                f"{resource.resource_type.rsplit(':', 1)[-1]} {resource.name} runs in public subnet(s) "
                f"{', '.join(subnets)} with security group(s) {', '.join(groups)} open to the Internet; place it "
                "in private subnets and allow only the callers' ranges",
                resource.urn,
            )
