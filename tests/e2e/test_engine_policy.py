"""The policy pack under the real engine: `pulumi preview --policy-pack policy` (the README's command) on the
first `up` of a dev-shaped stack, where the engine hands the pack values still unknown at preview. The CLI
starts the pack through the language host's RunPlugin (tools/e2e/gomod/pulumi/languagehost), which runs it
with the project's virtualenv as PulumiPolicy.yaml names it.

Expectations come from the pack itself run offline on the render of the same stack file
(`policy.nemotron_policies.offline.evaluate`): with no mandatory finding the engine previews; a planted
violation (the pack config declares the stack protected while its model cache is neither protected nor
retained on delete) is refused by the engine with the policy's name and each message the pack reports offline.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any, Optional

from policy.nemotron_policies.offline import Violation, evaluate
from policy.nemotron_policies.pack import PACK_NAME
from policy.nemotron_policies.records import load_records
from tools.e2e.harness import Harness
from tools.e2e.pulumi_cli import PROJECT_NAME, Project, stack_config

KEY = PROJECT_NAME + ":"
STACK = "dev-policy"
PLANTED = {"data-protection": {"protectedStacks": [STACK]}}


def _offline(project: Project, pack_config: Optional[dict[str, Any]]) -> list[Violation]:
    records = load_records(project.root.parent / "render" / STACK / "resources.json", STACK, PROJECT_NAME)
    return evaluate(records, pack_config, stack=STACK)


def _preview_with_pack(project: Project, *extra: str) -> subprocess.CompletedProcess[str]:
    return project.pulumi(
        "preview", "--stack", STACK, "--policy-pack", "policy", "--non-interactive", *extra, check=False, timeout=120
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
        assert clean.returncode == 0, clean.stdout[-4000:] + clean.stderr[-2000:]
        assert PACK_NAME in clean.stdout, clean.stdout[-4000:]  # the engine ran the pack's analyzer

        planted = [v for v in _offline(project, PLANTED) if v.mandatory]
        assert planted and {v.policy_name for v in planted} == set(PLANTED), planted
        pack_config = tmp_path / "pack-config.json"
        pack_config.write_text(json.dumps(PLANTED))
        refused = _preview_with_pack(project, "--policy-pack-config", str(pack_config))
        output = _flat(refused.stdout + refused.stderr)
        assert refused.returncode != 0, output[-4000:]
        named = [v.policy_name for v in planted if f"[mandatory] {v.policy_name}" not in output]
        assert not named, (named, output[-4000:])
        missing = [v.message for v in planted if _flat(v.message) not in output]
        assert not missing, (missing, output[-4000:])
    finally:
        project.pulumi("stack", "rm", STACK, "--yes", "--force", check=False)
