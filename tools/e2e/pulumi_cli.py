"""The real Pulumi CLI against a local backend, for the end-to-end scenarios.

A `Project` is a scratch copy of this repository's Pulumi project (links to its code and data, its own
stack files), logged in to a `file://` backend with a passphrase secrets provider, so a scenario never
touches the committed stack files or anyone's Pulumi account. Every CLI call is bounded in time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from tools.e2e.control_plane import TOOLS_BIN

REPO = Path(__file__).resolve().parents[2]
PROJECT_NAME = str(yaml.safe_load((REPO / "Pulumi.yaml").read_text())["name"])
# What a scratch project does not copy; its stack files and build output are its own.
NOT_COPIED = {".git", "build", ".pytest_cache", ".tools", ".mypy_cache", ".ruff_cache"}


class PulumiError(Exception):
    def __init__(self, command: list[str], result: subprocess.CompletedProcess[str]):
        self.output = result.stdout + result.stderr
        super().__init__(f"`{' '.join(command)}` exited {result.returncode}:\n{self.output[-6000:]}")
        self.returncode = result.returncode


def stack_config(stack: str) -> dict[str, Any]:
    """A committed stack file's `config:` block (as the CLI reads it)."""
    return dict(yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"])


@dataclass
class Project:
    root: Path
    kubeconfig: Path
    timeout: int = 600
    extra_env: dict[str, str] = field(default_factory=dict)  # what a scenario sets for the CLI and its plugins

    @classmethod
    def create(cls, work: Path, kubeconfig: Path, source: Path = REPO) -> Project:
        """A scratch project linking to `source`'s code and data (a checkout of this repository)."""
        root = work / "project"
        root.mkdir(parents=True)
        (work / "state").mkdir()
        (work / "home").mkdir()
        project = cls(root, kubeconfig)
        project.link(source)
        project.pulumi("login", f"file://{work / 'state'}")
        return project

    def link(self, source: Path) -> None:
        """Make the project's code and data a copy of `source`'s (its stack files stay the project's own).
        A copy, not links: the program finds its files (the prewarm program) relative to its own modules."""
        for entry in self.root.iterdir():
            if entry.name.startswith("Pulumi.") and entry.name != "Pulumi.yaml":
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        for entry in source.iterdir():
            if entry.name in NOT_COPIED or entry.name.startswith(".venv"):
                continue
            if entry.name.startswith("Pulumi.") and entry.name != "Pulumi.yaml":
                continue
            if entry.is_dir():
                shutil.copytree(
                    entry, self.root / entry.name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "build")
                )
            else:
                shutil.copy2(entry, self.root / entry.name)
        (self.root / ".venv").symlink_to(REPO / ".venv")  # the program runs in this checkout's virtualenv

    @property
    def env(self) -> dict[str, str]:
        work = self.root.parent
        return {
            **os.environ,
            "PATH": f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PULUMI_HOME": str(work / "home"),
            "PULUMI_BACKEND_URL": f"file://{work / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": "e2e-only-passphrase",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "KUBECONFIG": str(self.kubeconfig),
            "NO_COLOR": "1",
            **self.extra_env,
        }

    def pulumi(self, *args: str, check: bool = True, timeout: Optional[int] = None) -> subprocess.CompletedProcess[str]:
        command = ["pulumi", *args]
        try:
            result = subprocess.run(
                command, cwd=self.root, env=self.env, capture_output=True, text=True, timeout=timeout or self.timeout
            )
        except subprocess.TimeoutExpired as expired:  # say what the engine was still waiting for
            output = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else ""
            result = subprocess.CompletedProcess(command, -9, output, f"timed out after {expired.timeout} s")
            raise PulumiError(command, result) from None
        if check and result.returncode != 0:
            raise PulumiError(command, result)
        return result

    def start(self, *args: str, log: Path) -> subprocess.Popen[bytes]:
        """A CLI call in the background, bounded by `timeout`, for a scenario that interrupts it."""
        with log.open("wb") as out:
            return subprocess.Popen(
                ["timeout", "-k", "5", str(self.timeout), "pulumi", *args],
                cwd=self.root,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    # --- stacks -----------------------------------------------------------------------------------
    def write_stack(self, stack: str, config: dict[str, Any]) -> None:
        """Replace the stack file's `config:` (what `stack init` added beside it, its encryption salt, stays)."""
        path = self.root / f"Pulumi.{stack}.yaml"
        document = yaml.safe_load(path.read_text()) if path.exists() else {}
        path.write_text(yaml.safe_dump({**document, "config": config}, sort_keys=False))

    def stack_file(self, stack: str) -> dict[str, Any]:
        """The stack file's `config:` as it is now (secrets as their ciphertext)."""
        return dict((yaml.safe_load((self.root / f"Pulumi.{stack}.yaml").read_text()) or {}).get("config") or {})

    def render(self, stack: str) -> list[dict[str, Any]]:
        """The offline render of the same stack file (the project's `make render`), its resources.json."""
        out = self.root.parent / "render"
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "tools.render",
                "--stack",
                stack,
                "--project-dir",
                str(self.root),
                "--out",
                str(out),
                "--secret-placeholders",
            ],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode != 0:
            raise RuntimeError(f"render of {stack} exited {result.returncode}: {result.stdout}{result.stderr}")
        return list(json.loads((out / stack / "resources.json").read_text()))

    def init(self, stack: str, secrets: Optional[dict[str, str]] = None) -> None:
        self.pulumi("stack", "init", stack, "--secrets-provider", "passphrase")
        for key, value in (secrets or {}).items():
            self.pulumi("config", "set", "--secret", "--stack", stack, f"{PROJECT_NAME}:{key}", value)

    def up(
        self, stack: str, *extra: str, check: bool = True, timeout: Optional[int] = None
    ) -> subprocess.CompletedProcess[str]:
        return self.pulumi(
            "up", "--stack", stack, "--yes", "--skip-preview", "--non-interactive", *extra, check=check, timeout=timeout
        )

    def preview(self, stack: str, check: bool = True) -> dict[str, Any]:
        """`pulumi preview --json`: the engine's plan (steps with their ops) and its diagnostics."""
        # --show-replacement-steps: a replacement's create and delete steps, in the order the engine runs them.
        result = self.pulumi(
            "preview", "--stack", stack, "--json", "--show-replacement-steps", "--non-interactive", check=False
        )
        try:
            plan = dict(json.loads(result.stdout))
        except json.JSONDecodeError:
            raise PulumiError(["pulumi", "preview", "--stack", stack, "--json"], result) from None
        if check and result.returncode != 0:
            raise PulumiError(["pulumi", "preview", "--stack", stack, "--json"], result)
        plan["exitCode"] = result.returncode
        return plan

    def destroy(
        self, stack: str, check: bool = True, timeout: Optional[int] = None
    ) -> subprocess.CompletedProcess[str]:
        return self.pulumi(
            "destroy", "--stack", stack, "--yes", "--skip-preview", "--non-interactive", check=check, timeout=timeout
        )

    def deployment(self, stack: str) -> dict[str, Any]:
        """The stack's last checkpoint (`pulumi stack export`): its resources and pending operations."""
        return dict(json.loads(self.pulumi("stack", "export", "--stack", stack).stdout)["deployment"])

    def state(self, stack: str) -> list[dict[str, Any]]:
        """The engine's state: every resource of the stack's last checkpoint."""
        return list(self.deployment(stack).get("resources") or [])

    def outputs(self, stack: str) -> dict[str, Any]:
        return dict(json.loads(self.pulumi("stack", "output", "--stack", stack, "--json", "--show-secrets").stdout))


def kill_tree(pid: int) -> None:
    """SIGKILL a process and every process below it, as a crash does (the CLI starts its plugins in process
    groups of their own: sdk/go/common/util/cmdutil/child_unix.go)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    doomed, queue = [], [pid]
    while queue:
        doomed.append(queue.pop())
        queue += children.get(doomed[-1], [])
    for victim in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
