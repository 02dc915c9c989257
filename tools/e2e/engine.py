"""The real Pulumi engine through `pulumi.automation`, for the end-to-end scenarios and `make diff`.

A `Project` is a scratch copy of this repository's Pulumi project (its code and data, its own stack files) in a
`LocalWorkspace` on the harness's own CLI (`.tools/bin/pulumi`, which also puts the built providers and
language host first on the CLI's PATH), a `file://` backend and the passphrase secrets provider, so a scenario
never touches the committed stack files or anyone's Pulumi account. Each operation returns the engine's typed
events (`Run`). Every CLI call is bounded in time: a watchdog kills the CLI and its plugins (`kill_cli`), which
is also how a scenario interrupts an `up`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import yaml
from pulumi import automation as auto

from tools.e2e.control_plane import TOOLS_BIN

REPO = Path(__file__).resolve().parents[2]
PROJECT_NAME = str(yaml.safe_load((REPO / "Pulumi.yaml").read_text())["name"])
# What a scratch project does not copy; its stack files and build output are its own.
NOT_COPIED = {".git", "build", ".pytest_cache", ".tools", ".mypy_cache", ".ruff_cache"}


@dataclass(frozen=True)
class Run:
    """What one engine operation reported: its events in order, whether it succeeded, and its output (for
    failure messages and `make diff`'s text)."""

    events: list[auto.EngineEvent] = field(repr=False)
    ok: bool
    output: str = field(repr=False)

    @property
    def steps(self) -> list[auto.StepEventMetadata]:
        """Every step the engine started (or, in a preview, planned), in order."""
        return [e.resource_pre_event.metadata for e in self.events if e.resource_pre_event]

    @property
    def finished(self) -> list[auto.StepEventMetadata]:
        """Every step the engine finished."""
        return [e.res_outputs_event.metadata for e in self.events if e.res_outputs_event]

    def diagnostics(self, *severities: str) -> list[str]:
        """The messages of `severities` (by default every one but `debug`): `info#err` is a plugin's or the
        program's stderr."""
        wanted = severities or ("info", "info#err", "warning", "error")
        return [
            e.diagnostic_event.message
            for e in self.events
            if e.diagnostic_event and e.diagnostic_event.severity in wanted
        ]

    @property
    def policies(self) -> list[auto.PolicyEvent]:
        return [e.policy_event for e in self.events if e.policy_event]

    @property
    def summary(self) -> Optional[auto.SummaryEvent]:
        return next((e.summary_event for e in self.events if e.summary_event), None)


class _Stack(auto.Stack):
    """`pulumi.automation`'s Stack without the CLI runs the scenarios do not use (seconds each on a loaded
    machine): every operation names its stack (`--stack`), so it is never selected; `up`, `destroy` and `refresh`
    do not read the stack's outputs and last history entry back into their result, which the scenarios never
    read (they read the operation's own events)."""

    def __init__(self, name: str, workspace: auto.Workspace) -> None:
        self.name, self.workspace = name, workspace

    def outputs(self) -> auto.OutputMap:
        return {}

    def info(self, show_secrets: bool = True) -> auto.UpdateSummary:
        return auto.UpdateSummary("not read", datetime.min, "", {}, {}, "not read")


class PulumiError(Exception):
    def __init__(self, what: str, run: Run):
        self.run = run
        super().__init__(f"`pulumi {what}` failed:\n{run.output[-6000:]}")


def stack_config(stack: str, root: Path = REPO) -> dict[str, Any]:
    """A stack file's `config:` block (as the CLI reads it), by default a committed one's."""
    return dict((yaml.safe_load((root / f"Pulumi.{stack}.yaml").read_text()) or {}).get("config") or {})


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], list(children.get(pid, []))
    while queue:
        found.append(queue.pop())
        queue += children.get(found[-1], [])
    return found


def kill_cli() -> list[int]:
    """SIGKILL every Pulumi CLI this process started, and every process below it, as a crash does (the CLI
    starts its plugins in process groups of their own: sdk/go/common/util/cmdutil/child_unix.go). Returns the
    CLIs' pids."""
    cli = os.path.realpath(TOOLS_BIN / "pulumi")
    clis = []
    for pid in _descendants(os.getpid()):
        with contextlib.suppress(OSError):
            if os.path.realpath(f"/proc/{pid}/exe") == cli:
                clis.append(pid)
    for victim in [v for pid in clis for v in (pid, *_descendants(pid))]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
    return clis


def _stack_file(name: str) -> bool:
    return name.startswith("Pulumi.") and name != "Pulumi.yaml"


@dataclass
class Project:
    root: Path
    workspace: auto.LocalWorkspace
    environment: dict[str, str]  # the workspace's env_vars, the CLI's and its plugins' (a scenario may add to it)
    timeout: int = 600

    @classmethod
    def create(cls, work: Path, kubeconfig: Path, source: Path = REPO, venv: Path = REPO / ".venv") -> Project:
        """A scratch project copying `source`'s code and data (a checkout of this repository), run in `venv`."""
        root = work / "project"
        for directory in (root, work / "state", work / "home"):
            directory.mkdir(parents=True)
        environment = {
            # metadata=skip: fileblob writes each checkpoint's attributes sidecar by truncate-and-write
            # (gocloud.dev blob/fileblob attrs.go, setAttrs), so the program's StackReference to its own stack,
            # read while the engine writes a checkpoint, could decode an empty sidecar: "failed to load
            # checkpoint: EOF" (docs/deploy.md, "A file:// backend").
            "PULUMI_BACKEND_URL": f"file://{work / 'state'}?metadata=skip",
            "PULUMI_CONFIG_PASSPHRASE": "e2e-only-passphrase",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "KUBECONFIG": str(kubeconfig),
        }
        command = auto.PulumiCommand(root=str(TOOLS_BIN.parent))  # .tools/bin/pulumi
        workspace = auto.LocalWorkspace(
            str(root), str(work / "home"), env_vars=environment, secrets_provider="passphrase", pulumi_command=command
        )
        project = cls(root, workspace, environment)
        project.link(source, venv)
        return project

    def link(self, source: Path, venv: Path = REPO / ".venv") -> None:
        """Make the project's code and data a copy of `source`'s (its stack files stay the project's own), run in
        `venv`. A copy, not links: the program finds its files (the prewarm program) relative to its modules."""
        for entry in self.root.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            elif not _stack_file(entry.name):
                entry.unlink()

        def ignored(directory: str, names: list[str]) -> list[str]:
            own = [n for n in names if n in NOT_COPIED or n.startswith(".venv") or _stack_file(n)]
            return [n for n in names if n in ("__pycache__", "build")] + (own if Path(directory) == source else [])

        shutil.copytree(source, self.root, symlinks=True, ignore=ignored, dirs_exist_ok=True)
        (self.root / ".venv").symlink_to(venv)

    @property
    def env(self) -> dict[str, str]:
        """The CLI's environment, for a tool that runs the CLI itself (preflight)."""
        path = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "PATH": path, "PULUMI_HOME": str(self.workspace.pulumi_home), **self.environment}

    def stack(self, name: str) -> auto.Stack:
        return _Stack(name, self.workspace)

    def write_stack(self, stack: str, config: dict[str, Any]) -> None:
        """Replace the stack's settings' `config:` (what `stack init` and secret config put there, its
        encryption salt and secure values, stays)."""
        try:
            settings = self.workspace.stack_settings(stack)
        except FileNotFoundError:
            settings = auto.StackSettings()
        secure = {k: v for k, v in (settings.config or {}).items() if hasattr(v, "secure")}
        settings.config = {**config, **secure}
        self.workspace.save_stack_settings(stack, settings)

    def render(self, stack: str) -> list[dict[str, Any]]:
        """The offline render of the same stack file (the project's `make render`), its resources.json."""
        out = self.root.parent / "render"
        flags = f"--stack {stack} --project-dir {self.root} --out {out} --secret-placeholders".split()
        result = subprocess.run(
            [sys.executable, "-m", "tools.render", *flags], cwd=self.root, capture_output=True, text=True, timeout=300
        )
        if result.returncode != 0:
            raise RuntimeError(f"render of {stack} exited {result.returncode}: {result.stdout}{result.stderr}")
        return list(json.loads((out / stack / "resources.json").read_text()))

    def init(self, stack: str, secrets: Optional[dict[str, str]] = None) -> None:
        self.workspace.create_stack(stack)
        for key, value in (secrets or {}).items():
            self.workspace.set_config(stack, f"{PROJECT_NAME}:{key}", auto.ConfigValue(value, secret=True))

    def remove(self, stack: str) -> None:
        self.workspace.remove_stack(stack, force=True)

    def run(self, operation: str, stack: str, check: bool = True, timeout: Optional[int] = None, **options: Any) -> Run:
        """`up`, `preview`, `destroy` or `refresh` of the stack with `options` (`pulumi.automation`'s), killed
        after `timeout` seconds."""
        events: list[auto.EngineEvent] = []
        watchdog = threading.Timer(timeout or self.timeout, kill_cli)
        watchdog.start()
        try:
            result = getattr(self.stack(stack), operation)(on_event=events.append, color="never", **options)
            run = Run(events, True, result.stdout + result.stderr)
        except auto.CommandError as error:
            killed = f"killed after {timeout or self.timeout} s\n" if watchdog.finished.is_set() else ""
            run = Run(events, False, killed + str(error))
        finally:
            watchdog.cancel()
        if check and not run.ok:
            raise PulumiError(f"{operation} --stack {stack}", run)
        return run

    up = functools.partialmethod(run, "up")
    preview = functools.partialmethod(run, "preview")
    destroy = functools.partialmethod(run, "destroy")

    def deployment(self, stack: str) -> dict[str, Any]:
        """The stack's last checkpoint (`export_stack`): its resources and pending operations."""
        return dict(self.stack(stack).export_stack().deployment or {})

    def state(self, stack: str) -> list[dict[str, Any]]:
        """The engine's state: every resource of the stack's last checkpoint."""
        return list(self.deployment(stack).get("resources") or [])
