"""The policy pack under the real engine: a preview with `policy_packs=["policy"]` (the README's `pulumi preview
--policy-pack policy`, through `pulumi.automation`) on the first `up` of a dev-shaped stack, where the engine hands the pack values still unknown at preview. The CLI
starts the pack through the language host's RunPlugin (tools/e2e/gomod/pulumi/languagehost), which runs it
with the project's virtualenv as PulumiPolicy.yaml names it.

Expectations come from the pack itself run offline on the render of the same stack file
(`policy.nemotron_policies.offline.evaluate`): with no mandatory finding the engine previews, its summary naming the pack; a
planted violation (the pack config declares the stack protected while its model cache is neither protected nor
retained on delete) is refused, the engine's policy events naming the policy and each message the pack reports
offline.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Optional

from policy.nemotron_policies.offline import Violation, evaluate
from policy.nemotron_policies.pack import PACK_NAME
from policy.nemotron_policies.records import load_records
from tools.e2e.engine import PROJECT_NAME, Project, Run, stack_config
from tools.e2e.harness import Harness

KEY = PROJECT_NAME + ":"
STACK = "dev-policy"
PLANTED = {"data-protection": {"protectedStacks": [STACK]}}


def _offline(project: Project, pack_config: Optional[dict[str, Any]]) -> list[Violation]:
    records = load_records(project.root.parent / "render" / STACK / "resources.json", STACK, PROJECT_NAME)
    return evaluate(records, pack_config, stack=STACK)


def _preview_with_pack(project: Project, *configs: Path) -> Run:
    return project.preview(
        STACK, check=False, timeout=120, policy_packs=["policy"], policy_pack_configs=[str(c) for c in configs]
    )


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_policy_pack_under_the_engine(project: Project, cluster: Harness, tmp_path: Path) -> None:
    config = copy.deepcopy(stack_config("dev"))
    config[KEY + "kubernetes"]["namespace"] += "-policy"  # never the namespace the dev scenarios start from
    project.write_stack(STACK, config)
    project.render(STACK)
    project.init(STACK)
    try:
        assert not [v for v in _offline(project, None) if v.mandatory]
        clean = _preview_with_pack(project)
        assert clean.ok, clean.output[-4000:]
        # The packs the engine ran, keyed `<name>|<version tag>|<path>`.
        ran = {key.split("|")[0] for key in (clean.summary.policy_packs if clean.summary else {})}
        assert PACK_NAME in ran, clean.output[-4000:]
        assert not [e for e in clean.policies if e.enforcement_level == "mandatory"], clean.policies

        planted = [v for v in _offline(project, PLANTED) if v.mandatory]
        assert planted and {v.policy_name for v in planted} == set(PLANTED), planted
        pack_config = tmp_path / "pack-config.json"
        pack_config.write_text(json.dumps(PLANTED))
        refused = _preview_with_pack(project, pack_config)
        assert not refused.ok, refused.output[-4000:]
        reported = {(e.policy_name, _flat(e.message)) for e in refused.policies if e.enforcement_level == "mandatory"}
        assert {v.policy_name for v in planted} <= {name for name, _ in reported}, refused.policies
        missing = [v.message for v in planted if not any(_flat(v.message) in m for _, m in reported)]
        assert not missing, (missing, reported)
    finally:
        project.remove(STACK)
