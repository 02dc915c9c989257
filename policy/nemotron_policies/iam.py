"""What an AWS IAM policy grants, read from its statements as AWS evaluates them.

An `Allow` statement is too broad when it grants
- every action, or every action of a service (`*`, `*:*`, `s3:*`, `iam:*`; case-insensitive);
- every action but some (`NotAction`), or on every resource but some (`NotResource`);
- an action pattern (`s3:Get*`) on every resource (`Resource: "*"`), or an action that acts on named
  resources of another principal (`iam:PassRole`, `sagemaker:InvokeEndpoint*`) on every resource;
and a trust policy (a role's `assumeRolePolicy`, a resource policy) is open when it allows a principal `*`
(`"*"`, `{"AWS": "*"}`) or uses `NotPrincipal`, unless a `Condition` scopes the caller: a positive string, ARN
or IP operator (`StringEquals`, `ArnLike`, `IpAddress`..., not `...IfExists`, negated or `Null`) on a key that
names the calling principal or where the call comes from (`PRINCIPAL_SCOPING_KEYS`) with a value that narrows
it: an account or organization id without a wildcard (`o-*` is every organization), an ARN whose account is
not a wildcard (`arn:aws:iam::*:role/*` is every role of every account), a network range that is not the
whole Internet (`0.0.0.0/0`, `::/0`, or a `/0`-`/7`: `network_exposure.WORLD_PREFIX`), a VPC or endpoint id
without a wildcard. A condition on anything else (`aws:SecureTransport`) lets everyone in all the same.

A web-identity trust (`sts:AssumeRoleWithWebIdentity` for a `Federated` OIDC provider) admits every token
the provider issues unless its `Condition` names the audience (`<provider>:aud`) and the subject
(`<provider>:sub`: the service account, the repository) with positive operators: IAM's "Creating a role for
web identity or OpenID Connect Federation" and the EKS IRSA guide require both (a GitHub or EKS provider
signs tokens for every repository or every cluster service account). A subject that is only a wildcard or a
wildcard after its scheme (`system:serviceaccount:*`, `repo:*`) does not name one.

An identity policy also may not grant a sensitive action (`data/iam_sensitive_actions.yaml`: actions that return
credentials or escalate privileges, from Parliament's community auditors, and actions that read or decrypt
data) on every resource, unless the action has no resource-level permissions (Parliament's IAM privilege
database); an S3 resource whose bucket part is only a wildcard (`arn:aws:s3:::*/*`) is every bucket. A
condition scopes the caller only with a positive operator that is not `ForAllValues:` (true when the key is
absent); `aws:username` names no account; an ARN without an account (S3) narrows only without a wildcard; an
`aws:userid` only with a unique id before any wildcard. A role trusting a service that acts for other accounts
(`confused_deputy_services`: SageMaker, Bedrock) names the account or resource with `aws:SourceAccount` or
`aws:SourceArn`.

Wildcards are read as IAM matches them: `?` is one character, so a run of `*` and `?` holding a `*` (`?*`)
matches what `*` matches (`s3:?*` is `s3:*`). Managed policies are judged by name: AWS's administrator,
power-user and full-access policies (a name with the word `Admin`/`Administrator`, `PowerUser` or
`FullAccess`).
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .network_exposure import world_range
from .values import UNKNOWN, as_dict, parse_json

SENSITIVE = yaml.safe_load((Path(__file__).resolve().parent / "data" / "iam_sensitive_actions.yaml").read_text())
SENSITIVE_ACTIONS = {
    action: kind
    for kind in ("credentials_exposure", "privilege_escalation", "data_access")
    for action in SENSITIVE[kind]
}
CONFUSED_DEPUTY_SERVICES = frozenset(SENSITIVE["confused_deputy_services"])
SOURCE_KEYS = frozenset({"aws:sourceaccount", "aws:sourcearn"})
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
WILDCARD_RUN = re.compile(r"[*?]*\*[*?]*")
ADMIN_WORDS = frozenset({"Admin", "Administrator", "Administrators", "Admins"})
# Condition keys that say who calls, or from where: a principal "*" limited by one of them is not anyone.
PRINCIPAL_SCOPING_KEYS = frozenset(
    k.lower()
    for k in (
        "aws:SourceAccount",
        "aws:SourceArn",
        "aws:SourceOwner",
        "aws:SourceOrgID",
        "aws:SourceOrgPaths",
        "aws:PrincipalOrgID",
        "aws:PrincipalOrgPaths",
        "aws:PrincipalAccount",
        "aws:PrincipalArn",
        "aws:SourceVpc",
        "aws:SourceVpce",
        "aws:SourceIp",
        "aws:VpcSourceIp",
        "aws:userid",
        "kms:CallerAccount",
        "s3:DataAccessPointAccount",
        "s3:DataAccessPointArn",
    )
)
SCOPING_OPERATORS = frozenset(
    {
        "stringequals",
        "stringequalsignorecase",
        "stringlike",
        "arnequals",
        "arnlike",
        "ipaddress",
    }
)


def normalized(pattern: str) -> str:
    """An IAM pattern with every run of `*`/`?` that holds a `*` written as one `*` (`?*` matches what `*` does)."""
    return WILDCARD_RUN.sub("*", pattern.strip())


def managed_policy_problem(arn: Any) -> str | None:
    """Why an attached managed policy is too broad, or None."""
    if not isinstance(arn, str) or (":aws:policy/" not in arn and ":cluster-access-policy/" not in arn):
        return None
    name = arn.rsplit("/", 1)[-1]
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", name)
    if (
        name in ADMIN_MANAGED_POLICIES
        or "FullAccess" in name
        or "PowerUser" in name
        or ADMIN_WORDS.intersection(words)
        or name.startswith("AdministratorAccess")
    ):
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
        resource = normalized(resource)
        parts = resource.split(":", 5)
        if resource.strip("*") == "" or (len(parts) < 6 and resource.startswith("arn:") and parts[-1].strip("*") == ""):
            return True
        if len(parts) == 6 and (parts[5].strip("*") == "" or (parts[2] != "s3" and WILDCARD_RESOURCE.match(parts[5]))):
            return True  # S3 resources are bucket/key paths: `bucket/*` is one bucket, not a resource type
        if len(parts) == 6 and parts[2] == "s3" and parts[5].split("/", 1)[0].strip("*") == "":
            return True  # `arn:aws:s3:::*/*`: every object of every bucket
    return False


def _service_wildcard(action: Any) -> bool:
    if not isinstance(action, str):
        return False
    action = normalized(action)
    return action in ("*", "*:*") or (action.endswith(":*") and "*" not in action[:-1])


@functools.cache
def parliament() -> Any:
    """Parliament, imported on first use (its import costs ~0.2 s; most renders of a stack on an existing
    cluster have no IAM document)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # parliament imports pkg_resources
        import parliament as module

    return module


@functools.cache
def resource_level(action: str) -> bool:
    """Can `service:action` name its resources (Parliament's IAM privilege database)? Unknown actions: True."""
    service, _, name = action.partition(":")
    for definition in parliament().iam_definition:
        if definition["prefix"] == service:
            for privilege in definition["privileges"]:
                if privilege["privilege"].lower() == name:
                    return any(r["resource_type"] for r in privilege["resource_types"])
    return True


def grant_problems(document: Any, where: str, identity: bool = True) -> Iterator[str]:
    """Too-broad grants of a permissions policy (`identity`: an identity policy, whose `Resource: "*"` means every
    resource; in a resource policy it means the resource itself)."""
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
                service = normalized(action).split(":")[0]
                scope = f"every {service} action" if service not in ("*", "") else "every action of every service"
                yield f"{label} allows Action {json.dumps(action)} ({scope}); list the actions the role needs"
        if _every_resource(resources):
            for action in actions:
                if isinstance(action, str) and ("*" in action or "?" in action) and not _service_wildcard(action):
                    yield f"{label} allows the action pattern {json.dumps(action)} on every resource; scope Resource"
                elif isinstance(action, str) and action.strip().lower() in RESOURCE_SCOPED_ACTIONS:
                    yield (
                        f"{label} allows {action.strip()} on every resource; "
                        f"{RESOURCE_SCOPED_ACTIONS[action.strip().lower()]}"
                    )
                elif (
                    identity
                    and isinstance(action, str)
                    and action.strip().lower() in SENSITIVE_ACTIONS
                    and resource_level(action.strip().lower())
                ):
                    kind = SENSITIVE_ACTIONS[action.strip().lower()].replace("_", " ")
                    yield (
                        f"{label} allows {action.strip()} ({kind}) on every resource (Resource "
                        f"{json.dumps(resources if len(resources) > 1 else resources[0])}); name the resources"
                    )


def _open_principal(principal: Any) -> bool:
    if principal == "*":
        return True
    return any(value == "*" for entry in as_dict(principal).values() for value in _listed(entry))


# What a condition value must not be for its key to name who calls (lower-case keys).
ACCOUNT_KEYS = frozenset(
    k.lower()
    for k in (
        "aws:SourceAccount",
        "aws:SourceOwner",
        "aws:PrincipalAccount",
        "kms:CallerAccount",
        "s3:DataAccessPointAccount",
        "aws:SourceOrgID",
        "aws:PrincipalOrgID",
        "aws:SourceVpc",
        "aws:SourceVpce",
    )
)
ARN_KEYS = frozenset(k.lower() for k in ("aws:SourceArn", "aws:PrincipalArn", "s3:DataAccessPointArn"))
IP_KEYS = frozenset(k.lower() for k in ("aws:SourceIp", "aws:VpcSourceIp"))
ORG_PATH_KEYS = frozenset(k.lower() for k in ("aws:SourceOrgPaths", "aws:PrincipalOrgPaths"))
WILDCARDS = ("*", "?")


def _has_wildcard(value: str) -> bool:
    return any(w in value for w in WILDCARDS)


def _narrows(key: str, value: str) -> bool:
    """Does one condition value name a principal, account, organization or network narrower than everyone?"""
    value = normalized(value)
    if value.strip("*") == "":
        return False
    if key in ACCOUNT_KEYS:
        return not _has_wildcard(value)
    if key in ORG_PATH_KEYS:
        return not _has_wildcard(value.split("/", 1)[0])
    if key in ARN_KEYS:
        parts = value.split(":", 5)
        if len(parts) < 6 or _has_wildcard(":".join(parts[:3])):
            return False
        account, resource = parts[4], parts[5]
        return not _has_wildcard(account) if account else not _has_wildcard(resource)
    if key == "aws:userid":
        return not _has_wildcard(value.split(":", 1)[0])
    if key in IP_KEYS:
        return world_range(value) is False
    return not value.startswith(WILDCARDS)


def _scoping_value(key: str, value: Any) -> bool:
    values = _listed(value)
    return bool(values) and all(
        isinstance(v, (str, int)) and not isinstance(v, bool) and _narrows(key, str(v)) for v in values
    )


def scoped_condition(condition: Any) -> Any:
    """Does a `Condition` limit who may call (a positive operator on a principal-scoping key with a value that is
    not a bare wildcard)? `UNKNOWN` when it cannot be told."""
    if condition is UNKNOWN:
        return UNKNOWN
    unknown = False
    for operator, tests in as_dict(condition).items():
        if tests is UNKNOWN:
            unknown = True
            continue
        qualifier, _, base = str(operator).lower().rpartition(":")
        if base not in SCOPING_OPERATORS or qualifier == "forallvalues":
            continue  # ForAllValues is true when the key is absent
        for key, value in as_dict(tests).items():
            if str(key).lower() not in PRINCIPAL_SCOPING_KEYS:
                continue
            if value is UNKNOWN or UNKNOWN in _listed(value):
                unknown = True
            elif _scoping_value(str(key).lower(), value):
                return True
    return UNKNOWN if unknown else False


def trust_problems(document: Any, where: str) -> Iterator[str]:
    """Statements of a trust or resource policy that let anyone in."""
    found = statements(document)
    for index, statement in enumerate(found if isinstance(found, list) else []):
        if not _allows(statement):
            continue
        condition = statement.get("Condition")
        scoped = scoped_condition(condition) if condition else False
        if scoped is not False:
            continue
        label = f"{where} statement {statement.get('Sid') or index}"
        unless = "without a Condition" if not condition else "with no Condition on who calls (aws:SourceAccount, ...)"
        if "NotPrincipal" in statement:
            yield f"{label} allows NotPrincipal (every principal except those listed) {unless}"
        elif _open_principal(statement.get("Principal")):
            yield (
                f'{label} allows principal "*" {unless}; name the principals or add a Condition on '
                "aws:SourceAccount, aws:SourceArn, aws:PrincipalOrgID, aws:SourceVpce..."
            )


WEB_IDENTITY_ACTION = "sts:assumerolewithwebidentity"
# Subjects that name a scheme, not a subject: every service account, every repository, every project.
WIDE_SUBJECTS = frozenset({"", "system:serviceaccount", "system:serviceaccounts", "repo", "project_path"})
POSITIVE_OPERATORS = frozenset({"stringequals", "stringequalsignorecase", "stringlike"})


def _action_matches(pattern: Any, action: str) -> bool:
    if not isinstance(pattern, str):
        return False
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in normalized(pattern).lower())
    return re.fullmatch(regex, action) is not None


def _providers(principal: Any) -> list[Any]:
    """The OIDC providers a `Federated` principal names (`UNKNOWN` for one not known yet)."""
    federated = as_dict(principal).get("Federated")
    return [p for p in _listed(federated) if p is not None]


def _provider_host(provider: Any) -> Any:
    """`oidc.eks.<region>.amazonaws.com/id/<id>` of `arn:aws:iam::<acct>:oidc-provider/<host>` (the condition
    key prefix), the name itself for a provider given by host (`cognito-identity.amazonaws.com`)."""
    if not isinstance(provider, str):
        return UNKNOWN
    return provider.split(":oidc-provider/", 1)[1] if ":oidc-provider/" in provider else provider


def _named_claims(condition: Any, host: Any) -> Any:
    """The claims (`sub`, `aud`, ...) a condition pins with positive operators and narrow values; UNKNOWN when a
    value or key is unknown."""
    named: set[str] = set()
    unknown = False
    for operator, tests in as_dict(condition).items():
        qualifier, _, base = str(operator).lower().rpartition(":")
        if tests is UNKNOWN:
            unknown = True
            continue
        if base not in POSITIVE_OPERATORS or qualifier == "forallvalues":
            continue  # ...IfExists, negated, Null, and ForAllValues (true when the claim is absent) pin nothing
        for key, value in as_dict(tests).items():
            prefix, _, claim = str(key).rpartition(":")
            if host is not UNKNOWN and prefix.lower() != str(host).lower():
                continue
            if value is UNKNOWN or UNKNOWN in _listed(value):
                unknown = True
            elif _listed(value) and all(isinstance(v, str) and _names_one(claim.lower(), v) for v in _listed(value)):
                named.add(claim.lower())
    return UNKNOWN if unknown and not {"sub", "aud"} <= named else named


def _names_one(claim: str, value: str) -> bool:
    value = normalized(value)
    if value.strip("*") == "":
        return False
    if claim == "sub":
        head = re.split(r"[*?]", value, maxsplit=1)[0] if _has_wildcard(value) else value
        return head.rstrip(":/") not in WIDE_SUBJECTS
    return True


def web_identity_problems(document: Any, where: str) -> Iterator[str]:
    """Web-identity trust statements that do not pin the token's audience and subject."""
    found = statements(document)
    for index, statement in enumerate(found if isinstance(found, list) else []):
        actions = _listed(statement.get("Action"))
        if not _allows(statement) or not any(_action_matches(a, WEB_IDENTITY_ACTION) for a in actions):
            continue
        label = f"{where} statement {statement.get('Sid') or index}"
        for provider in _providers(statement.get("Principal")):
            named = _named_claims(statement.get("Condition"), _provider_host(provider))
            if named is UNKNOWN:
                continue
            missing = [claim for claim in ("aud", "sub") if claim not in named]
            if missing:
                yield (
                    f"{label} lets {provider if isinstance(provider, str) else 'its OIDC provider'} assume the role "
                    f"by web identity without pinning {' and '.join(missing)}: every token the provider issues "
                    "gets in; add StringEquals on <provider>:aud and <provider>:sub"
                )


def _service_principals(principal: Any) -> list[str]:
    return [str(s).lower() for s in _listed(as_dict(principal).get("Service")) if isinstance(s, str)]


def _names_source(condition: Any) -> Any:
    """Does a condition name the account or resource a service acts for (positive operator on aws:SourceAccount or
    aws:SourceArn with a narrowing value)? `UNKNOWN` when that cannot be told."""
    if condition is UNKNOWN:
        return UNKNOWN
    for operator, tests in as_dict(condition).items():
        qualifier, _, base = str(operator).lower().rpartition(":")
        if tests is UNKNOWN:
            return UNKNOWN
        if base not in SCOPING_OPERATORS or qualifier == "forallvalues":
            continue
        for key, value in as_dict(tests).items():
            if str(key).lower() in SOURCE_KEYS:
                if value is UNKNOWN or UNKNOWN in _listed(value):
                    return UNKNOWN
                if _scoping_value(str(key).lower(), value):
                    return True
    return False


def service_trust_problems(document: Any, where: str) -> Iterator[str]:
    """Trust statements for a service that acts for other accounts, without naming the account it acts for."""
    found = statements(document)
    for index, statement in enumerate(found if isinstance(found, list) else []):
        services = sorted(set(_service_principals(statement.get("Principal"))) & CONFUSED_DEPUTY_SERVICES)
        if not _allows(statement) or not services or _names_source(statement.get("Condition")) is not False:
            continue
        yield (
            f"{where} statement {statement.get('Sid') or index} allows {', '.join(services)} to assume the role "
            "without aws:SourceAccount or aws:SourceArn naming this account: the service can be made to use it for "
            "another account (confused deputy); add StringEquals aws:SourceAccount or ArnLike aws:SourceArn"
        )
