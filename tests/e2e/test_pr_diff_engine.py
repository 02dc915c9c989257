"""`make diff`'s engine preview under the real engine: a planted change of dev (its target's worker replicas
raised, from the catalog's recipe) in a throwaway clone, diffed by `tools.diff` with the engine. The engine
deploys the base and previews the head; its `pulumi preview --diff` is written beside the comment and linked
from it, and its plan is held against the offline diff (tests/test_pr_diff_engine.py plants the
disagreements; here the two must agree, or the comment names where they do not)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pr_diff_helpers import GIT_USER, copy_project

from serving_stack.facts.catalog import load_catalog
from tools import diff
from tools.pr_diff import sample

STACK = "dev"


def _raise_replicas(config: dict) -> tuple[str, str, int]:
    target = config["targets"][0]
    worker = load_catalog().recipe(target["id"]).worker_components()[0]
    before = int((target.get("replicas") or {}).get(worker["name"], worker["replicas"]))
    target["replicas"] = {**(target.get("replicas") or {}), worker["name"]: before + 1}
    return target["id"], worker["name"], before + 1


def test_the_engines_preview_is_linked_and_agrees_with_the_offline_diff(tmp_path: Path) -> None:
    repo = copy_project(tmp_path / "clone")
    target, _, _ = sample.edit_stack(repo, STACK, _raise_replicas)
    subprocess.run(["git", "-C", str(repo), *GIT_USER, "commit", "-qam", "raise replicas"], check=True)
    out = tmp_path / "pr-diff" / f"{STACK}.md"
    code = diff.main(
        ["--stack", STACK, "--base", "HEAD~1", "--repo", str(repo), "--venv", sys.prefix, "--out", str(out)]
    )
    text = out.read_text()
    assert code == 0, text
    lead = text.split("<details>")[0]
    engine_output = out.parent / "engine" / f"{STACK}.txt"
    assert engine_output.is_file() and target.replace("/", "-") in engine_output.read_text()
    assert "could not preview" not in lead, engine_output.read_text()[-3000:]
    assert f"engine/{STACK}.txt`" in lead
    assert "agrees with this offline diff" in lead, lead
    assert "⚙️ Engine preview: pulumi" in text and (out.parent / "full" / f"{STACK}.md").is_file()
