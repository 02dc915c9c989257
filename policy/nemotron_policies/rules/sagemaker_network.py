"""sagemaker-network: no SageMaker model, notebook instance or domain in a public subnet with a security
group open to the Internet.

SageMaker attaches its network interfaces to the subnets and groups a model's `vpcConfig` (a notebook's
`subnetId`/`securityGroups`, a domain's `subnetIds`) names: in a public subnet (`mapPublicIpOnLaunch`, or a
route to an Internet gateway) behind a group that admits the Internet on any port, the container is reachable
from anywhere. The subnets and groups are the stack's resources the SageMaker resource depends on (it takes
their ids); ids of resources outside the stack cannot be judged.
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, StackValidationArgs

from ..network_exposure import open_groups, public_subnets
from ..values import plain

SAGEMAKER_IN_VPC = frozenset(
    {
        "aws:sagemaker/model:Model",
        "aws:sagemaker/notebookInstance:NotebookInstance",
        "aws:sagemaker/domain:Domain",
    }
)


def validate_sagemaker_network(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    resources = [(r, plain(r.props)) for r in args.resources]
    public, exposed = public_subnets(resources), open_groups(resources)
    for resource, _ in resources:
        if resource.resource_type not in SAGEMAKER_IN_VPC:
            continue
        linked = {d.urn: d for d in resource.dependencies}
        subnets = sorted(linked[u].name for u in public & set(linked))
        groups = sorted(linked[u].name for u in exposed & set(linked))
        if subnets and groups:
            report_violation(
                f"{resource.resource_type.rsplit(':', 1)[-1]} {resource.name} runs in public subnet(s) "
                f"{', '.join(subnets)} with security group(s) {', '.join(groups)} open to the Internet; place it "
                "in private subnets and allow only the callers' ranges",
                resource.urn,
            )
