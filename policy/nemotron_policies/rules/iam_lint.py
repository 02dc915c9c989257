"""iam-policy-lint: every IAM policy document the stack writes passes Parliament (duo-labs/parliament 1.6.4,
PyPI, its IAM privilege database of April 2025), the maintained linter of AWS IAM policies: unknown actions
and condition operators, actions on resources they cannot act on (a wrong ARN shape), malformed statements,
mismatched condition types.

Documents are the identity policies (`RolePolicy`, `UserPolicy`, `GroupPolicy`, `Policy`,
`Role.inlinePolicies`) and the resource policies least-privilege reads (`privilege.RESOURCE_POLICIES`);
trust policies are not linted (Parliament reads them as identity policies and asks for a Resource). A
finding fails the rule when its severity is in `failOnSeverities` (default CRITICAL to LOW, Parliament's own
grading in `parliament/config.yaml`: an unknown action is LOW there, yet a typo in a Deny denies nothing); documents with unknown parts are judged once known. Parliament's
opinionated community auditors are off; least-privilege keeps the pack's own wildcard and trust rules.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from ..config import settings
from ..values import UNKNOWN, as_list, dig, is_unknown, plain, text
from .privilege import POLICY_DOCUMENTS, RESOURCE_POLICIES, ROLE

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # parliament imports pkg_resources
    import parliament

SEVERITIES = ["CRITICAL", "HIGH", "MEDIUM", "LOW", "INFO"]
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


def _documents(resource_type: str, props: Any) -> Iterator[tuple[str, Any]]:
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
    policy = parliament.analyze_policy_string(source, ignore_private_auditors=True)
    for finding in policy.findings:
        parliament.enhance_finding(finding)
        detail = finding.detail if isinstance(finding.detail, str) else json.dumps(finding.detail, default=str)
        yield str(finding.issue), str(finding.severity), detail


def validate_iam_policy_lint(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    failing = {str(s) for s in as_list(settings(args, SCHEMA)["failOnSeverities"])}
    props = plain(args.props)
    for where, document in _documents(args.resource_type, props):
        for issue, severity, detail in lint(document):
            if severity in failing:
                report_violation(f"{where}: Parliament {issue} ({severity}): {detail}", None)
