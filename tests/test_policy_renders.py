"""The committed stacks pass the pack: the dev and prod renders have no mandatory violation, and every
policy had something real to judge (so a pass is not vacuous)."""

from __future__ import annotations

import pytest
from policy_helpers import DAEMON_SET, DGD, of_type, recording

from policy.nemotron_policies.offline import evaluate, format_report

STACKS = ["dev", "prod"]


@pytest.mark.parametrize("stack", STACKS)
def test_render_has_no_mandatory_violation(stack):
    violations = evaluate(recording(stack), stack=stack)
    assert [v for v in violations if v.mandatory] == [], format_report(violations)


@pytest.mark.parametrize("stack", STACKS)
def test_every_worker_pool_has_its_prewarm_daemonset(stack):
    resources = recording(stack)
    assert of_type(resources, DAEMON_SET), "the render has no prewarm DaemonSet"
    assert [v for v in evaluate(resources, stack=stack) if v.policy_name == "prewarm-daemonsets"] == []


@pytest.mark.parametrize("stack", STACKS)
def test_advisory_findings_are_resource_requests_only(stack):
    """Upstream frontends (`resources: {}`) and the download Job declare no requests: recommendations."""
    advisory = [v for v in evaluate(recording(stack), stack=stack) if not v.mandatory]
    assert {v.policy_name for v in advisory} <= {"resource-requests"}
    frontends = {f"{DGD}::{r.name}" for r in of_type(recording(stack), DGD)}
    assert frontends <= {v.resource for v in advisory}


def test_prod_judges_a_disaggregated_target_and_a_retained_cache():
    resources = recording("prod")
    dgds = [r.inputs for r in of_type(resources, DGD)]
    assert any(c["type"] == "prefill" for d in dgds for c in d["spec"]["components"])
    (cache,) = [r for r in resources if r.type == "aws:fsx/lustreFileSystem:LustreFileSystem"]
    assert cache.protect
