"""IAM documents the components share."""

from __future__ import annotations

import json
from typing import Any, Optional


def assume_role_policy(
    service: str,
    *,
    tag_session: bool = False,
    source_account: Optional[str] = None,
    source_arn: Optional[str] = None,
) -> str:
    """A trust policy letting one AWS service principal assume the role (EKS Pod Identity also tags the
    session, hence `tag_session`). `source_account` / `source_arn` add the `aws:SourceAccount` /
    `aws:SourceArn` conditions against the confused-deputy problem (the ARN may hold wildcards: ArnLike)."""
    action: str | list[str] = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    statement: dict[str, Any] = {"Effect": "Allow", "Principal": {"Service": service}, "Action": action}
    condition: dict[str, Any] = {}
    if source_account is not None:
        condition["StringEquals"] = {"aws:SourceAccount": source_account}
    if source_arn is not None:
        condition["ArnLike"] = {"aws:SourceArn": source_arn}
    if condition:
        statement["Condition"] = condition
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})
