"""IAM documents and the node role the components share."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import pulumi
import pulumi_aws as aws


def assume_role_policy(service: str, *, tag_session: bool = False, source_arn: Optional[str] = None) -> str:
    """A trust policy letting one AWS service principal assume the role (EKS Pod Identity also tags the
    session, hence `tag_session`). `source_arn` adds the `aws:SourceArn` condition against the confused-deputy
    problem (the ARN may hold wildcards: ArnLike)."""
    action: str | list[str] = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    statement: dict[str, Any] = {"Effect": "Allow", "Principal": {"Service": service}, "Action": action}
    if source_arn is not None:
        statement["Condition"] = {"ArnLike": {"aws:SourceArn": source_arn}}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def allow(sid: str, action: Any, resource: Any, **condition: Any) -> dict[str, Any]:
    """One Allow statement of an identity policy; `condition`: its Condition block, when given."""
    statement = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}
    return {**statement, "Condition": condition} if condition else statement


def node_role(
    prefix: str, managed_policies: Sequence[str], tags: Mapping[str, str], parent: pulumi.Resource
) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
    """An EC2 node role (`<prefix>-role`) with the managed policies attached (`<prefix>-<policy name>`)."""
    child = pulumi.ResourceOptions(parent=parent)
    trust = assume_role_policy("ec2.amazonaws.com")
    role = aws.iam.Role(f"{prefix}-role", assume_role_policy=trust, tags=tags, opts=child)
    return role, [
        aws.iam.RolePolicyAttachment(f"{prefix}-{arn.rsplit('/', 1)[-1]}", role=role.name, policy_arn=arn, opts=child)
        for arn in managed_policies
    ]
