"""Render a git ref and the working tree offline, each through its own `make render`.

The base is checked out as a temporary `git worktree` and rendered by *its* Makefile, so the diff keeps
working when the render entry point moves between commits (`nemotron.render` today, elsewhere after a
refactor). Both renders use the current virtualenv (`VENV=<abs path>`): the base worktree's files are
dated in the past so its `make` sees the venv's install stamps as up to date and installs nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tools.pr_diff.records import Render, load_render

RENDER_TIMEOUT_SECONDS = 600
_PAST = 946_684_800  # 2000-01-01: older than any install stamp
_MAKE_ENV = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")


class RenderError(Exception):
    """A tree that does not render at all (bad config, no `make render`): not a diff."""


@dataclass(frozen=True)
class RenderedTree:
    label: str
    render: Render
    exit_code: int


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RenderError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def render_tree(tree: Path, stack: str, venv: Path, label: str) -> RenderedTree:
    """`make render STACK=<stack> VENV=<venv>` in `tree`; a policy failure (exit 1 with files) still diffs."""
    out = tree / "build" / stack
    shutil.rmtree(out, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in _MAKE_ENV}
    result = subprocess.run(
        ["make", "--no-print-directory", "-C", str(tree), "render", f"STACK={stack}", f"VENV={venv}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=RENDER_TIMEOUT_SECONDS,
        check=False,
    )
    if not (out / "resources.json").is_file():
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-8:])
        raise RenderError(f"{label} does not render (`make render STACK={stack}` exit {result.returncode}):\n{tail}")
    return RenderedTree(label, load_render(out), result.returncode)


def _date_in_the_past(tree: Path) -> None:
    for directory, _, files in os.walk(tree):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.utime(path, (_PAST, _PAST))


@contextmanager
def base_worktree(repo: Path, ref: str) -> Iterator[tuple[Path, str]]:
    """A detached temporary worktree of `ref` and its commit; removed afterwards."""
    commit = git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}")
    parent = Path(tempfile.mkdtemp(prefix="pr-diff-"))
    tree = parent / "base"
    git(repo, "worktree", "add", "--detach", "--quiet", str(tree), commit)
    try:
        _date_in_the_past(tree)
        yield tree, commit
    finally:
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], capture_output=True, check=False
        )
        shutil.rmtree(parent, ignore_errors=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True, check=False)


def render_base_and_head(repo: Path, ref: str, stack: str, venv: Path) -> tuple[RenderedTree, RenderedTree]:
    """The base ref and the working tree (uncommitted changes included), rendered."""
    head_commit = git(repo, "rev-parse", "--short", "HEAD")
    dirty = bool(git(repo, "status", "--porcelain"))
    with base_worktree(repo, ref) as (tree, commit):
        base = render_tree(tree, stack, venv, f"base `{ref}` ({commit[:10]})")
    head_label = f"head `{head_commit}`" + (" with uncommitted changes" if dirty else "")
    head = render_tree(repo, stack, venv, head_label)
    return base, head
