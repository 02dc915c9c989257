"""IAM documents the components share."""
from __future__ import annotations

import json


def assume_role_policy(service: str, *, tag_session: bool = False) -> str:
    """A trust policy letting one AWS service principal assume the role (EKS Pod Identity also tags the
    session, hence `tag_session`)."""
    action: str | list[str] = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": action}],
    })
