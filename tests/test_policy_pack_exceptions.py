"""The pack's stated exceptions and kept rule sets: `prewarm-daemonsets.unwarmedStacks` lets a stack that turns
prewarm off (`modelCache.prewarm.enabled: false`) through, and only that stack; the sensitive-action list of
least-privilege holds Parliament's credential-exposure list as its package ships it."""

from __future__ import annotations

import pytest
from policy_helpers import prewarm_daemon_sets, recording

from policy.nemotron_policies.iam import SENSITIVE
from policy.nemotron_policies.offline import evaluate


def without_prewarm(stack: str) -> list:
    resources = recording(stack)
    for daemon_set in prewarm_daemon_sets(resources):
        resources.remove(daemon_set)
    return resources


@pytest.mark.parametrize(
    ("unwarmed", "refused"), [([], True), (["prod"], False), (["dev"], True)], ids=["none", "this-stack", "another"]
)
def test_a_stack_without_prewarm_passes_only_when_the_pack_config_names_it(unwarmed, refused):
    config = {"prewarm-daemonsets": {"unwarmedStacks": unwarmed}}
    found = [
        v for v in evaluate(without_prewarm("prod"), config, stack="prod") if v.policy_name == "prewarm-daemonsets"
    ]
    assert bool(found) == refused, [v.message for v in found]


def test_an_unwarmed_stack_still_has_its_prewarm_daemonsets_checked():
    resources = recording("prod")
    daemon_set = prewarm_daemon_sets(resources)[0]
    daemon_set.inputs["spec"]["template"]["spec"]["tolerations"] = []
    config = {"prewarm-daemonsets": {"unwarmedStacks": ["prod"]}}
    assert [v for v in evaluate(resources, config, stack="prod") if v.policy_name == "prewarm-daemonsets"]


def test_the_credential_exposure_list_is_parliaments():
    from parliament.community_auditors.credentials_exposure import CREDENTIALS_EXPOSURE_ACTIONS

    assert set(SENSITIVE["credentials_exposure"]) == set(CREDENTIALS_EXPOSURE_ACTIONS)
