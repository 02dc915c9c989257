"""The policy pack under the real engine: `pulumi preview --policy-pack policy` (the README's command) through
the harness's own analyzer plugin (tools/e2e/bin/pulumi-analyzer-policy-python), on the first `up` of a
dev-shaped stack, where the engine hands the pack values still unknown at preview.

Expectations come from the pack itself run offline on the render of the same stack file
(`policy.nemotron_policies.offline.evaluate`): with no mandatory finding the engine previews; a planted
violation (the pack config declares the stack protected while its model cache is neither protected nor
retained on delete) is refused by the engine with each message the pack reports offline.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from policy.nemotron_policies.offline import Violation, evaluate
from policy.nemotron_policies.pack import PACK_NAME
from policy.nemotron_policies.records import load_records
from tools.e2e.pulumi_cli import PROJECT_NAME, Project, stack_config

KEY = PROJECT_NAME + ":"
STACK = "dev-policy"
PLANTED = {"data-protection": {"protectedStacks": [STACK]}}


def _offline(project: Project, pack_config: dict | None) -> list[Violation]:
    records = load_records(project.root.parent / "render" / STACK / "resources.json", STACK, PROJECT_NAME)
    return evaluate(records, pack_config, stack=STACK)


def _preview_with_pack(project: Project, *extra: str):
    return project.pulumi(
        "preview", "--stack", STACK, "--policy-pack", "policy", "--non-interactive", *extra, check=False
    )


def test_policy_pack_under_the_engine(project: Project, cluster, tmp_path: Path):
    config = copy.deepcopy(stack_config("dev"))
    config[KEY + "kubernetes"]["namespace"] += "-policy"  # never the namespace the dev scenarios start from
    project.write_stack(STACK, config)
    project.render(STACK)
    project.init(STACK)

    assert not [v for v in _offline(project, None) if v.mandatory]
    clean = _preview_with_pack(project)
    assert clean.returncode == 0, clean.stdout[-4000:] + clean.stderr[-2000:]
    assert PACK_NAME in clean.stdout, clean.stdout[-4000:]

    planted = [v for v in _offline(project, PLANTED) if v.mandatory]
    assert {v.policy_name for v in planted} == set(PLANTED), planted
    pack_config = tmp_path / "pack-config.json"
    pack_config.write_text(json.dumps(PLANTED))
    refused = _preview_with_pack(project, "--policy-pack-config", str(pack_config))
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output[-4000:]
    missing = [v.message for v in planted if " ".join(v.message.split()) not in " ".join(output.split())]
    assert not missing, (missing, output[-4000:])
    project.pulumi("stack", "rm", STACK, "--yes")
