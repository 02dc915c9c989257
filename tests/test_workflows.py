"""Invariants of .github/workflows that actionlint and zizmor cannot know: the comment workflow listens to
the PR workflow by its exact name and reads only its artifacts, never the pull request's code; secrets
and write tokens stay out of anything a fork's code runs; every action is pinned by commit SHA."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

WORKFLOWS = Path(__file__).resolve().parent.parent / ".github" / "workflows"
PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"uses: (\S+) # v\d+\.\d+\.\d+$", re.MULTILINE)


def _load(name: str) -> dict[str, Any]:
    # PyYAML reads the key `on` as True.
    document: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    document["on"] = document.pop(True)
    return document


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


FILES = sorted(p.name for p in WORKFLOWS.glob("*.yml"))


@pytest.mark.parametrize("name", FILES)
def test_actions_are_pinned_by_sha_with_their_version(name: str) -> None:
    text = (WORKFLOWS / name).read_text()
    workflow = _load(name)
    uses = [step["uses"] for step in _steps(workflow) if "uses" in step]
    assert all(PINNED.match(u) for u in uses), uses
    assert sorted(VERSION_COMMENT.findall(text)) == sorted(uses), "each pin carries `# vX.Y.Z`"
    local = [job["uses"] for job in workflow["jobs"].values() if "uses" in job]
    assert all(u.startswith("$/.github/workflows/") and (WORKFLOWS / Path(u).name).is_file() for u in local)
    assert uses or local


@pytest.mark.parametrize("name", FILES)
def test_permissions_are_explicit_and_checkouts_keep_no_credentials(name: str) -> None:
    workflow = _load(name)
    assert workflow["permissions"] == {}
    for job in workflow["jobs"].values():
        assert "permissions" in job
        if "steps" in job:  # a job that calls a reusable workflow has neither
            assert "timeout-minutes" in job and "concurrency" in job
    for step in _steps(workflow):
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False


def test_comment_workflow_follows_the_pr_workflow_and_runs_none_of_its_code() -> None:
    checks, comment = _load("pull-request.yml"), _load("pr-diff-comment.yml")
    assert comment["on"]["workflow_run"]["workflows"] == [checks["name"]]
    assert not any(step.get("uses", "").startswith("actions/checkout@") for step in _steps(comment))
    uploaded = next(
        s for s in checks["jobs"]["diff"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")
    )
    downloaded = next(s for s in _steps(comment) if s.get("uses", "").startswith("actions/download-artifact@"))
    prefix = downloaded["with"]["pattern"].rstrip("*")
    assert uploaded["with"]["name"].startswith(prefix)
    script = next(s["run"] for s in _steps(comment) if "run" in s)
    marker = re.search(r"marker='([^']+)'", script)
    assert marker and '"$marker"' in script and "startswith" in script


def test_fork_reachable_jobs_get_no_secrets_or_write_tokens() -> None:
    checks = _load("pull-request.yml")
    assert list(checks["on"]) == ["pull_request"]
    for name, job in checks["jobs"].items():
        text = yaml.safe_dump(job)
        if "secrets." in text or job["permissions"].get("id-token") == "write":
            assert "head.repo.full_name == github.repository" in job.get("if", ""), name
        assert all(level in ("read", "none") or scope == "id-token" for scope, level in job["permissions"].items())


def test_prod_deploys_after_dev_through_its_environment() -> None:
    jobs = _load("deploy.yml")["jobs"]
    assert jobs["prod"]["needs"] == "dev"
    assert {job["with"]["stack"] for job in jobs.values()} == {"dev", "prod"}
    reusable = _load("pulumi-up.yml")["jobs"]["up"]
    assert reusable["environment"] == "${{ inputs.stack }}"
    assert reusable["concurrency"]["cancel-in-progress"] is False
