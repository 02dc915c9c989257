"""The comment workflow's script, run as GitHub runs it (bash, `gh api` with `--jq`), against a stand-in `gh`
that answers with the REST API's documented shapes (pulls, run artifacts, run jobs, issue comments) and
applies `--jq` with jq, as gh does. It posts each stack's bounded Markdown whole, puts a fixed line in place
of a file larger than `make diff` writes (never a cut), links the artifacts and the preview jobs, and stays
under GitHub's 65,536 characters as valid Markdown."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import yaml
from pr_diff_helpers import markdown_problems

from tools.diff import ARTIFACT, Links
from tools.pr_diff.markdown import MAX_BYTES

WORKFLOW = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "pr-diff-comment.yml"
MARKER = "<!-- nemotron-pr-diff -->"
GITHUB_LIMIT = 65_536
HEAD_SHA = "0123456789abcdef0123456789abcdef01234567"
ENV = {
    "REPO": "example/stack",
    "SERVER_URL": "https://github.com",
    "RUN_ID": "4242",
    "HEAD_SHA": HEAD_SHA,
    "RUN_URL": "https://github.com/example/stack/actions/runs/4242",
    "GH_TOKEN": "not-a-token",
}
# Answers in the shapes of docs.github.com/rest: pulls/get, actions/list-workflow-run-artifacts,
# actions/list-jobs-for-workflow-run, issues/list-comments.
API = {
    "repos/example/stack/pulls/7": {"number": 7, "head": {"sha": HEAD_SHA}},
    "repos/example/stack/actions/runs/4242/artifacts": {
        "total_count": 2,
        "artifacts": [
            {"id": 11, "name": "pr-diff-dev", "size_in_bytes": 2048, "expired": False},
            {"id": 12, "name": "pr-diff-prod", "size_in_bytes": 4096, "expired": False},
        ],
    },
    "repos/example/stack/actions/runs/4242/jobs": {
        "total_count": 3,
        "jobs": [
            {"name": "tests and static checks", "html_url": "https://github.com/x/job/1", "conclusion": "success"},
            {"name": "pulumi preview (dev)", "html_url": "https://github.com/x/job/2", "conclusion": "success"},
            {"name": "pulumi preview (prod)", "html_url": "https://github.com/x/job/3", "conclusion": "failure"},
        ],
    },
    "repos/example/stack/issues/7/comments": [],
}
FAKE_GH = f"""#!{sys.executable}
import json, os, shutil, subprocess, sys
args = sys.argv[1:]
assert args[0] == "api", args
api = json.loads(os.environ["FAKE_GH_API"])
path = next(a for a in args[1:] if a.startswith("repos/"))
if "--method" in args:
    body = next(a for a in args if a.startswith("body=@"))[len("body=@"):]
    shutil.copy(body, os.environ["FAKE_GH_POSTED"])
    sys.exit(0)
answer = json.dumps(api[path])
if "--jq" in args:
    jq = args[args.index("--jq") + 1]
    answer = subprocess.run(["jq", "-r", jq], input=answer, capture_output=True, text=True, check=True).stdout
else:
    answer += "\\n"
sys.stdout.write(answer)
"""


def run_comment_script(tmp_path: Path, stacks: dict[str, str]) -> str:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["comment"]["steps"]
    script = next(step["run"] for step in steps if "run" in step)
    for stack, markdown in stacks.items():
        folder = tmp_path / "pr-diff" / f"pr-diff-{stack}"
        folder.mkdir(parents=True)
        (folder / f"{stack}.md").write_text(markdown)
        (folder / "pr-number.txt").write_text("7\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(stat.S_IRWXU)
    posted = tmp_path / "posted.md"
    env = {
        **os.environ,
        **ENV,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_GH_API": json.dumps(API),
        "FAKE_GH_POSTED": str(posted),
    }
    result = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return posted.read_text()


def test_the_comment_posts_each_bounded_stack_whole_and_a_fixed_line_for_an_oversized_one(tmp_path):
    dev = "### `dev`: **±0 $/h** · no resource changes\n\n<details><summary>x</summary>\n\n| a |\n|---|\n| 1 |\n\n</details>\n"
    oversized = "### `prod`: **+1.00 $/h (+1%)**\n\n<details><summary>Resources</summary>\n\n" + "| x |\n" * MAX_BYTES
    body = run_comment_script(tmp_path, {"dev": dev, "prod": oversized})
    assert body.startswith(f"{MARKER}\n## Offline preview diff\n")
    assert dev in body
    assert "### `prod`: " in body and "more than the comment holds" in body and "| x |" not in body
    assert "[pr-diff-prod](https://github.com/example/stack/actions/runs/4242/artifacts/12)" in body
    assert "[pulumi preview (prod)](https://github.com/x/job/3): failure" in body
    assert "tests and static checks" not in body
    assert not markdown_problems(body)


def test_two_stacks_at_the_bound_fit_in_one_comment(tmp_path):
    def at_bound(stack: str) -> str:
        head = f"### `{stack}`: **±0 $/h**\n\n"
        filler = "- 💲 " + "é" * 40 + "\n"
        text = head + filler * ((MAX_BYTES - len(head.encode())) // len(filler.encode()))
        assert len(text.encode()) <= MAX_BYTES
        return text

    stacks = {"dev": at_bound("dev"), "prod": at_bound("prod")}
    body = run_comment_script(tmp_path, stacks)
    assert all(text in body for text in stacks.values())
    assert len(body) < GITHUB_LIMIT and len(body.encode()) < GITHUB_LIMIT


def test_the_diff_job_links_its_own_run_and_uploads_the_artifact_the_comment_names():
    checks = yaml.safe_load((WORKFLOW.parent / "pull-request.yml").read_text())["jobs"]["diff"]["steps"]
    upload = next(s for s in checks if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == ARTIFACT.format(stack="${{ matrix.stack }}")
    assert upload["with"]["path"] == "build/pr-diff/"
    make = next(s for s in checks if "make -s diff" in s.get("run", ""))
    assert 'RUN_URL="$RUN_URL"' in make["run"] and make["env"]["RUN_URL"].endswith("/actions/runs/${{ github.run_id }}")
    links = Links.of("prod", Path("build/pr-diff/prod.md"), "https://example.invalid/run/1")
    assert (
        f"`{ARTIFACT.format(stack='prod')}`" in links.full_diff and "(https://example.invalid/run/1)" in links.full_diff
    )


def test_every_stack_the_diff_job_runs_fits_the_comment_at_the_bound():
    """Another stack in the matrix needs a smaller `MAX_BYTES`, or its diff would be replaced by a link."""
    stacks = yaml.safe_load((WORKFLOW.parent / "pull-request.yml").read_text())["jobs"]["diff"]["strategy"]["matrix"]
    script = next(s["run"] for s in yaml.safe_load(WORKFLOW.read_text())["jobs"]["comment"]["steps"] if "run" in s)
    body_bytes = int(script.split("max_body_bytes=")[1].split()[0])
    stack_bytes = int(script.split("max_stack_bytes=")[1].split()[0])
    assert stack_bytes == MAX_BYTES
    assert len(stacks["stack"]) * MAX_BYTES <= body_bytes
