"""An access entry with an EKS admin access policy (what a deploy role needs) passes least-privilege only when
the pack's configuration names its principal: the stack config accepts it, the organisation decides."""

from __future__ import annotations

import pytest
from rollout_helpers import committed_config
from stack_helpers import run_config

from components.cluster import ACCESS_POLICIES
from policy.nemotron_policies.offline import evaluate

ADMIN_POLICIES = sorted(name for name, arn in ACCESS_POLICIES.items() if "Admin" in arn.rsplit("/", 1)[-1])
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"


def _prod_with_access(policy: str) -> tuple[str, list]:
    config = committed_config("prod")
    (entry, *_) = config["aws"]["cluster"]["create"]["accessEntries"]
    entry["accessPolicy"] = policy
    return entry["principalArn"], list(run_config(config, stack="prod").resources)


def _association_findings(resources: list, pack_config: dict | None) -> list[str]:
    violations = evaluate(resources, pack_config, stack="prod")
    return [v.message for v in violations if v.policy_name == "least-privilege" and ASSOCIATION in v.resource]


@pytest.mark.parametrize("policy", ADMIN_POLICIES)
def test_admin_access_policy_needs_the_principal_named_in_the_pack_config(policy):
    principal, resources = _prod_with_access(policy)
    assert any(ACCESS_POLICIES[policy] in m for m in _association_findings(resources, None))
    named = {"least-privilege": {"clusterAdminPrincipals": [principal]}}
    assert _association_findings(resources, named) == []
    other = {"least-privilege": {"clusterAdminPrincipals": [principal.replace("role/", "role/other-")]}}
    assert _association_findings(resources, other) != []


def test_the_committed_view_access_passes_without_configuration():
    _, resources = _prod_with_access("View")
    assert _association_findings(resources, None) == []
