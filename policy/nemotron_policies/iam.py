"""What an AWS IAM policy grants, read from its statements as AWS evaluates them.

An `Allow` statement is too broad when it grants
- every action, or every action of a service (`*`, `*:*`, `s3:*`, `iam:*`; case-insensitive);
- every action but some (`NotAction`), or on every resource but some (`NotResource`);
- an action pattern (`s3:Get*`) on every resource (`Resource: "*"`), or an action that acts on named
  resources of another principal (`iam:PassRole`, `sagemaker:InvokeEndpoint*`) on every resource;
and a trust policy (a role's `assumeRolePolicy`, a resource policy) is open when it allows a principal `*`
(`"*"`, `{"AWS": "*"}`) or uses `NotPrincipal`, without a `Condition`. Managed policies are judged by name:
AWS's administrator and full-access policies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from .values import UNKNOWN, as_dict, parse_json

ADMIN_MANAGED_POLICIES = frozenset(
    {
        "AdministratorAccess",
        "PowerUserAccess",
        "IAMFullAccess",
        "AmazonSageMakerFullAccess",
        "SystemAdministrator",
        "NetworkAdministrator",
        "DatabaseAdministrator",  # job-function/ policies
        "AmazonEKSClusterAdminPolicy",
        "AmazonEKSAdminPolicy",  # EKS access policies (cluster-access-policy/)
    }
)
# Actions whose whole point is the resource they name: on every resource, a role passes any role or invokes
# any endpoint of the account (the gateway's invoke role names its fallback endpoints).
RESOURCE_SCOPED_ACTIONS = {
    "iam:passrole": "name the roles it may pass",
    "sagemaker:invokeendpoint": "name the endpoints it may invoke",
    "sagemaker:invokeendpointwithresponsestream": "name the endpoints it may invoke",
    "sagemaker:invokeendpointasync": "name the endpoints it may invoke",
}
WILDCARD_RESOURCE = re.compile(r"^(\*+|[\w-]+[/:]\*+)$")


def managed_policy_problem(arn: Any) -> str | None:
    """Why an attached managed policy is too broad, or None."""
    if not isinstance(arn, str) or (":aws:policy/" not in arn and ":cluster-access-policy/" not in arn):
        return None
    name = arn.rsplit("/", 1)[-1]
    if name in ADMIN_MANAGED_POLICIES or name.endswith("FullAccess") or name.startswith("AdministratorAccess"):
        return f"attaches {arn}; grant the specific actions the role needs instead"
    return None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(document: Any) -> Any:
    """The statements of a policy document (JSON text or object), `UNKNOWN`, or None if it does not parse."""
    parsed = parse_json(document)
    if parsed is UNKNOWN:
        return UNKNOWN
    if not isinstance(parsed, dict):
        return None
    found = parsed.get("Statement")
    if found is UNKNOWN:
        return UNKNOWN
    return [s for s in _listed(found) if isinstance(s, dict)]


def _allows(statement: dict[str, Any]) -> bool:
    effect = statement.get("Effect")
    return isinstance(effect, str) and effect.lower() == "allow"


def _every_resource(resources: list[Any]) -> bool:
    """Does a `Resource` list name every resource (`*`), or every resource of a service or resource type
    (`arn:aws:s3:::*`, `arn:aws:iam::*:role/*`)?"""
    for resource in resources:
        if not isinstance(resource, str):
            continue
        parts = resource.split(":", 5)
        if resource.strip("*") == "" or (len(parts) < 6 and resource.startswith("arn:") and parts[-1].strip("*") == ""):
            return True
        if len(parts) == 6 and (parts[5].strip("*") == "" or (parts[2] != "s3" and WILDCARD_RESOURCE.match(parts[5]))):
            return True  # S3 resources are bucket/key paths: `bucket/*` is one bucket, not a resource type
    return False


def _service_wildcard(action: Any) -> bool:
    return isinstance(action, str) and (
        action.strip() in ("*", "*:*") or (action.strip().endswith(":*") and "*" not in action.strip()[:-1])
    )


def grant_problems(document: Any, where: str) -> Iterator[str]:
    """Too-broad grants of a permissions policy."""
    found = statements(document)
    for index, statement in enumerate(found if isinstance(found, list) else []):
        if not _allows(statement):
            continue
        label = f"{where} statement {statement.get('Sid') or index}"
        actions = [a for a in _listed(statement.get("Action")) if a is not None]
        resources = [r for r in _listed(statement.get("Resource")) if r is not None]
        if "NotAction" in statement:
            yield f"{label} allows NotAction (every action except those listed); list the actions the role needs"
        if "NotResource" in statement:
            yield f"{label} allows NotResource (every resource except those listed); list the resources"
        for action in actions:
            if _service_wildcard(action):
                service = action.split(":")[0].strip()
                scope = f"every {service} action" if service not in ("*", "") else "every action of every service"
                yield f"{label} allows Action {json.dumps(action)} ({scope}); list the actions the role needs"
        if _every_resource(resources):
            for action in actions:
                if isinstance(action, str) and "*" in action and not _service_wildcard(action):
                    yield f"{label} allows the action pattern {json.dumps(action)} on every resource; scope Resource"
                elif isinstance(action, str) and action.strip().lower() in RESOURCE_SCOPED_ACTIONS:
                    yield (
                        f"{label} allows {action.strip()} on every resource; "
                        f"{RESOURCE_SCOPED_ACTIONS[action.strip().lower()]}"
                    )


def _open_principal(principal: Any) -> bool:
    if principal == "*":
        return True
    return any(value == "*" for entry in as_dict(principal).values() for value in _listed(entry))


def trust_problems(document: Any, where: str) -> Iterator[str]:
    """Statements of a trust or resource policy that let anyone in."""
    found = statements(document)
    for index, statement in enumerate(found if isinstance(found, list) else []):
        if not _allows(statement) or statement.get("Condition"):
            continue
        label = f"{where} statement {statement.get('Sid') or index}"
        if "NotPrincipal" in statement:
            yield f"{label} allows NotPrincipal (every principal except those listed) without a Condition"
        elif _open_principal(statement.get("Principal")):
            yield f'{label} allows principal "*" without a Condition; name the principals or add a Condition'
