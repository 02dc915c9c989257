"""iam-policy-lint: every IAM policy document the stack writes passes Parliament (duo-labs/parliament 1.6.4,
PyPI, its IAM privilege database of April 2025), the maintained linter of AWS IAM policies: unknown actions
and condition operators, actions on resources they cannot act on (a wrong ARN shape), malformed statements,
mismatched condition types.

Documents are the identity policies (`RolePolicy`, `UserPolicy`, `GroupPolicy`, `Policy`,
`Role.inlinePolicies`) and the resource policies least-privilege reads (`privilege.RESOURCE_POLICIES`);
trust policies are not linted (Parliament reads them as identity policies and asks for a Resource). A
finding fails the rule when its severity is in `failOnSeverities` (default CRITICAL to LOW, Parliament's own
grading in `parliament/config.yaml`: an unknown action is LOW there, yet a typo in a Deny denies nothing); documents with unknown parts are judged once known. Parliament's
opinionated community auditors are off, and so are its findings on how much a statement grants
(`RESOURCE_STAR`, and resource mismatches of the actions a pattern expands to): least-privilege judges breadth.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Iterator
from typing import Any

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from ..config import settings
from ..iam import parliament as iam_parliament
from ..values import UNKNOWN, as_list, dig, is_unknown, plain, text
from .privilege import POLICY_DOCUMENTS, RESOURCE_POLICIES, ROLE


@functools.cache
def _parliament() -> Any:
    """Parliament, imported on the first IAM document (its import costs ~0.2 s; most renders of a stack on an
    existing cluster have none)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # parliament imports pkg_resources
        import parliament

    return parliament


SEVERITIES = ["CRITICAL", "HIGH", "MEDIUM", "LOW", "INFO"]
# Parliament's findings on how much a statement grants: least-privilege owns that judgement (its wildcard and
# every-resource rules), so they are not reported twice.
BREADTH_ISSUES = frozenset({"RESOURCE_STAR", "RESOURCE_EFFECTIVELY_STAR"})
WILDCARDS = ("*", "?")
SCHEMA = PolicyConfigSchema(
    {
        "failOnSeverities": {
            "type": "array",
            "items": {"type": "string", "enum": SEVERITIES},
            "default": ["CRITICAL", "HIGH", "MEDIUM", "LOW"],
            "description": "Parliament finding severities that fail the rule.",
        },
    }
)


# Access point policies name `accesspoint/<name>/object/*` ARNs, which Parliament's resource formats do not
# know (it reports every object action there as a mismatch): least-privilege alone judges them.
ACCESS_POINT_POLICIES = frozenset(
    {
        "aws:s3/accessPoint:AccessPoint",
        "aws:s3control/accessPointPolicy:AccessPointPolicy",
        "aws:s3control/multiRegionAccessPointPolicy:MultiRegionAccessPointPolicy",
    }
)


def _documents(resource_type: str, props: Any) -> Iterator[tuple[str, Any]]:
    if resource_type in ACCESS_POINT_POLICIES:
        return
    if resource_type in POLICY_DOCUMENTS:
        yield "policy", dig(props, "policy")
    elif resource_type in RESOURCE_POLICIES:
        field = RESOURCE_POLICIES[resource_type]
        yield field, dig(props, field, "policy") if field == "details" else dig(props, field)
    elif resource_type == ROLE:
        for index, inline in enumerate(as_list(dig(props, "inlinePolicies"))):
            yield f"inlinePolicies[{text(dig(inline, 'name')) or index}]", dig(inline, "policy")


def _contains_unknown(value: Any) -> bool:
    if value is UNKNOWN or is_unknown(value):
        return True
    if isinstance(value, dict):
        return any(_contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_unknown(v) for v in value)
    return False


def lint(document: Any) -> Iterator[tuple[str, str, str]]:
    """(issue, severity, detail) of Parliament's findings on one document (JSON text or object)."""
    if document is None or _contains_unknown(document):
        return
    source = document if isinstance(document, str) else json.dumps(document)
    if not source.strip():
        return
    parliament = iam_parliament()
    policy = parliament.analyze_policy_string(source, ignore_private_auditors=True)
    written = _written_actions(source)
    for finding in policy.findings:
        parliament.enhance_finding(finding)
        if finding.issue in BREADTH_ISSUES:
            continue
        detail: Any = finding.detail
        if finding.issue == "RESOURCE_MISMATCH" and isinstance(detail, list):
            # Only actions the document names: a pattern's expansion (`s3:*`) is least-privilege's to judge.
            detail = [d for d in detail if isinstance(d, dict) and str(d.get("action", "")).lower() in written]
            if not detail:
                continue
        yield str(finding.issue), str(finding.severity), detail if isinstance(detail, str) else json.dumps(detail)


def _written_actions(source: str) -> set[str]:
    """The actions a document names without a wildcard, lower-cased."""
    try:
        parsed = json.loads(source)
    except json.JSONDecodeError:
        return set()
    found = parsed.get("Statement", []) if isinstance(parsed, dict) else []
    actions: set[str] = set()
    for statement in found if isinstance(found, list) else [found]:
        listed = statement.get("Action", []) if isinstance(statement, dict) else []
        for action in listed if isinstance(listed, list) else [listed]:
            if isinstance(action, str) and not any(w in action for w in WILDCARDS):
                actions.add(action.strip().lower())
    return actions


def validate_iam_policy_lint(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    failing = {str(s) for s in as_list(settings(args, SCHEMA)["failOnSeverities"])}
    props = plain(args.props)
    for where, document in _documents(args.resource_type, props):
        for issue, severity, detail in lint(document):
            if severity in failing:
                report_violation(f"{where}: Parliament {issue} ({severity}): {detail}", None)
