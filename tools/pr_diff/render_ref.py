"""Render a git ref and the working tree offline, each through its own `make render` in its own virtualenv.

The base is checked out as a temporary `git worktree` and rendered by *its* Makefile, so the diff keeps
working when the render entry point moves between commits. Each tree renders with the packages of its own
requirement files: the working tree in `--venv`; the base in that same virtualenv when its render
requirements (the prerequisites of its Makefile's `$(VENV)/.render-deps` rule, and the files they `-r`/`-c`
include) are byte for byte the working tree's, else in a virtualenv cached by their hash (and the Python
version) under `~/.cache/nemotron-stack-diff/venvs/` (`NEMOTRON_DIFF_CACHE` moves it), which the base's own
`make` installs once and later diffs reuse. Rendered with the head's packages, a base that imported a
package the head no longer pins failed (`ModuleNotFoundError`). The base worktree's files are dated in the
past so its `make` sees an installed virtualenv's stamps as up to date.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving_stack.errors import ConfigError
from tools.pr_diff.records import Render, load_render
from tools.stack_files import stack_config

RENDER_TIMEOUT_SECONDS = 600
INSTALL_TIMEOUT_SECONDS = 1200
CACHE_ENV = "NEMOTRON_DIFF_CACHE"
_PAST = 946_684_800  # 2000-01-01: older than any install stamp
_MAKE_ENV = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
# The Makefile rule that installs what `make render` imports (this repository's since the venv split).
_RENDER_DEPS_RULE = re.compile(r"^\$\(VENV\)/\.render-deps:([^|\n]*)", re.MULTILINE)
_INCLUDE = re.compile(r"^\s*-(?:r|c|-requirement|-constraint)[ =]\s*(\S+)", re.MULTILINE)


class RenderError(Exception):
    """A tree that does not render at all (bad config, no `make render`, requirements that do not install)."""


@dataclass(frozen=True)
class RenderedTree:
    label: str
    render: Render
    exit_code: int
    venv: Path  # the virtualenv it rendered in
    config: dict[str, Any]  # its stack file's config as the engine hands it (empty where unreadable here)


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RenderError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def _make(tree: Path, timeout: int, *args: str) -> subprocess.CompletedProcess[str]:
    """`make` in `tree`, without the variables of a calling `make diff`."""
    env = {k: v for k, v in os.environ.items() if k not in _MAKE_ENV}
    command = ["make", "--no-print-directory", "-C", str(tree), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, check=False)


def render_requirements(tree: Path) -> list[Path]:
    """The requirement files `make render` installs in `tree`, with the files they include, in order."""
    makefile = tree / "Makefile"
    rule = _RENDER_DEPS_RULE.search(makefile.read_text()) if makefile.is_file() else None
    if rule is None:
        raise RenderError(f"{tree.name}: its Makefile has no `$(VENV)/.render-deps` rule naming its requirement files")
    pending = [tree / name for name in rule.group(1).split()]
    found: list[Path] = []
    while pending:
        path = pending.pop(0)
        if path in found or not path.is_file():
            continue
        found.append(path)
        pending += [path.parent / name for name in _INCLUDE.findall(path.read_text())]
    return found


def requirements_hash(tree: Path, python_version: str) -> str:
    """sha256 of the Python version and each render requirement file's path and bytes."""
    digest = hashlib.sha256(python_version.encode())
    for path in render_requirements(tree):
        digest.update(b"\0" + str(path.relative_to(tree)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nemotron-stack-diff"


def python_version(venv: Path) -> str:
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RenderError(f"{venv}/bin/python does not run: {result.stderr.strip()[-300:]}")
    return result.stdout.strip()


def _tail(result: subprocess.CompletedProcess[str]) -> str:
    return "\n".join((result.stderr or result.stdout).strip().splitlines()[-8:])


def tree_venv(tree: Path, head: Path, head_venv: Path, label: str) -> Path:
    """The virtualenv `tree` renders in: the head's when their render requirements agree, else one cached by
    the hash of the tree's own, installed by the tree's own `make` (its `.render-deps` rule) once."""
    version = python_version(head_venv)
    key = requirements_hash(tree, version)
    if key == requirements_hash(head, version):
        return head_venv
    venv = cache_root() / "venvs" / key[:20]
    venv.parent.mkdir(parents=True, exist_ok=True)
    with venv.with_suffix(".lock").open("w") as lock:
        # One installer at a time per cached virtualenv (two stacks diffed at once share the base's); the
        # lock goes with the file.
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = head_venv / "bin" / "python"
        result = _make(tree, INSTALL_TIMEOUT_SECONDS, f"VENV={venv}", f"PYTHON={python}", f"{venv}/.render-deps")
    if result.returncode != 0:
        files = ", ".join(str(p.relative_to(tree)) for p in render_requirements(tree))
        raise RenderError(
            f"{label}: its requirements ({files}) do not install into {venv} (exit {result.returncode}):\n{_tail(result)}"
        )
    return venv


def render_tree(tree: Path, stack: str, venv: Path, label: str) -> RenderedTree:
    """`make render STACK=<stack> VENV=<venv>` in `tree`; a policy failure (exit 1 with files) still diffs."""
    out = tree / "build" / stack
    shutil.rmtree(out, ignore_errors=True)
    result = _make(tree, RENDER_TIMEOUT_SECONDS, "render", f"STACK={stack}", f"VENV={venv}")
    if not (out / "resources.json").is_file():
        raise RenderError(
            f"{label} does not render (`make render STACK={stack}` exit {result.returncode}):\n{_tail(result)}"
        )
    return RenderedTree(label, load_render(out), result.returncode, venv, _config(tree, stack))


def _config(tree: Path, stack: str) -> dict[str, Any]:
    """The stack file as this checkout reads it; a base of an older shape may not read: nothing then."""
    try:
        return stack_config(stack, tree)[0]
    except ConfigError:
        return {}


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
    """The base ref (in the virtualenv of its own requirements) and the working tree (uncommitted changes
    included, in `venv`), rendered."""
    head_commit = git(repo, "rev-parse", "--short", "HEAD")
    dirty = bool(git(repo, "status", "--porcelain"))
    with base_worktree(repo, ref) as (tree, commit):
        label = f"base `{ref}` ({commit[:10]})"
        base = render_tree(tree, stack, tree_venv(tree, repo, venv, label), label)
    head_label = f"head `{head_commit}`" + (" with uncommitted changes" if dirty else "")
    head = render_tree(repo, stack, venv, head_label)
    return base, head
