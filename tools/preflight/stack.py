"""The stack the preflight judges and what it reports about it: one `Finding` per line, naming the config key
and the fix (a blocker makes the first `pulumi up` fail, a warning may, a note says how a check was judged).

The stack file is read as `make render` reads it and the program runs once under the mock runtime, which
yields the plan and every Kubernetes object the stack writes; the checks read those, never a second
derivation. Which secrets are set comes from `pulumi config --json` when the Pulumi CLI is on PATH (it prints
no secret's value), else from the stack file's `secure:` values, with a warning saying so; the program runs
with a placeholder for each missing secret, so the other checks still run, and each missing one is a blocker.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from serving_stack.config import StackConfig
from serving_stack.config.secrets import SecretNeed, secret_needs
from serving_stack.config.stack import SECRET_KEYS
from serving_stack.errors import bounded
from serving_stack.plan.stack import StackPlan
from tools.mock_runtime import PROJECT_DIR, run_program
from tools.render import kubernetes_objects
from tools.rollout.graph import HELM_RELEASE
from tools.secret_placeholders import stack_config_of
from tools.stack_files import SECRET, project_name, stack_config

Severity = Literal["blocker", "warning", "note"]
SEVERITIES: tuple[Severity, ...] = ("blocker", "warning", "note")
EXIT_BLOCKED, EXIT_BAD_INPUT = 1, 2
MAX_FINDING = 600  # characters of one finding line
PULUMI_TIMEOUT_SECONDS = 60
JSON = dict[str, Any]


@dataclass(frozen=True)
class Finding:
    """`key`: the config key the user edits (`aws.nodePools[0].availabilityZone`), or the secret's name;
    `problem`: what the world says; `fix`: what to do about it."""

    severity: Severity
    key: str
    problem: str
    fix: str

    def line(self) -> str:
        return bounded(f"{self.severity}: {self.key}: {self.problem}; {self.fix}", MAX_FINDING, quote=False)


blocker, warning, note = (functools.partial(Finding, severity) for severity in SEVERITIES)


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Blockers first, then warnings, then notes; within each, in the order the checks found them."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))


def exit_status(findings: Iterable[Finding]) -> int:
    return EXIT_BLOCKED if any(f.severity == "blocker" for f in findings) else 0


@dataclass(frozen=True)
class PreflightStack:
    """`objects`: every Kubernetes object the program registers (custom resources included), as applied;
    `releases`: the inputs of each Helm release it installs."""

    name: str
    config: StackConfig
    plan: StackPlan
    objects: tuple[JSON, ...]
    releases: tuple[JSON, ...]


@dataclass(frozen=True)
class SetSecrets:
    """The secret keys the stack sets (`plain`: set without `--secret`, which `up` refuses) and how that was read."""

    secret: frozenset[str]
    plain: frozenset[str]
    source: Finding


def load_stack(stack: str, project_dir: Path = PROJECT_DIR) -> tuple[PreflightStack, list[Finding]]:
    """The stack and the findings about its secrets and placeholders; a `ConfigError` for bad input."""
    config, secret_keys = stack_config(stack, project_dir)
    project = project_name(project_dir)
    typed = stack_config_of(config, project)
    set_secrets = read_set_secrets(stack, project, project_dir, config, secret_keys)
    needs = secret_needs(typed)
    findings = [set_secrets.source, *secret_findings(stack, needs, set_secrets)]
    placed = {f"{project}:{need.key}": SECRET for need in needs if f"{project}:{need.key}" not in secret_keys}
    with contextlib.redirect_stderr(io.StringIO()):  # the program's own warnings: `make render` shows them
        run = run_program({**config, **placed}, [*secret_keys, *placed], stack, project_dir, allow_placeholders=True)
    assert run.plan is not None, "the program always builds its plan"
    records = [r.to_json() for r in run.resources]
    findings += [
        blocker(p.key, f"{p.value} is a placeholder ({p.what}) that `pulumi up` refuses", f"set {p.set_to}")
        for p in run.plan.placeholders
    ]
    objects = tuple(kubernetes_objects(records))
    releases = tuple(r["inputs"] for r in records if r["type"] == HELM_RELEASE)
    return PreflightStack(stack, typed, run.plan, objects, releases), findings


def secret_findings(stack: str, needs: list[SecretNeed], set_secrets: SetSecrets) -> list[Finding]:
    findings = [
        blocker(
            key,
            "is set in plain text; `pulumi up` refuses a secret that is not a Pulumi secret",
            f"pulumi config rm {key} --stack {stack}, then pulumi config set --secret {key} <value> --stack {stack}",
        )
        for key in sorted(set_secrets.plain)
    ]
    missing: dict[str, SecretNeed] = {}
    for need in needs:
        if need.key not in set_secrets.secret | set_secrets.plain:
            missing.setdefault(need.key, need)
    return findings + [
        blocker(
            need.key,
            f"secret not set; needed because {need.why}",
            f"pulumi config set --secret {need.key} <value> --stack {stack}",
        )
        for need in missing.values()
    ]


def read_set_secrets(
    stack: str, project: str, project_dir: Path, file_config: dict[str, Any], file_secret_keys: list[str]
) -> SetSecrets:
    """The secret keys set, from the Pulumi CLI when it is on PATH and answers, else from the stack file."""
    pulumi, failure = shutil.which("pulumi"), ""
    if pulumi is not None:
        try:
            listed = _pulumi_config(pulumi, stack, project_dir)
            keys = {k: bool(v.get("secret")) for k, v in listed.items() if isinstance(v, dict)}
            how = note("secrets", f"read with `pulumi config --json --stack {stack}`", "the values were not read")
            return _set_secrets(keys, project, how)
        except (OSError, subprocess.SubprocessError, ValueError) as error:
            failure = f"`pulumi config` failed ({bounded(str(error), 200, quote=False)})"
    failure = failure or "the Pulumi CLI is not on PATH (https://www.pulumi.com/docs/install/)"
    how = warning(
        "secrets",
        f"{failure}: judged from Pulumi.{stack}.yaml's secure: values only; a secret set through a Pulumi ESC "
        "environment is not seen",
        f"install the CLI and `pulumi login`, then rerun `make preflight STACK={stack}`",
    )
    return _set_secrets({key: key in file_secret_keys for key in file_config}, project, how)


def _set_secrets(keys: dict[str, bool], project: str, source: Finding) -> SetSecrets:
    """`keys`: full config key (`project:key`) -> whether it is a secret."""
    prefix = f"{project}:"
    wanted = {k[len(prefix) :]: s for k, s in keys.items() if k.startswith(prefix) and k[len(prefix) :] in SECRET_KEYS}
    return SetSecrets(
        frozenset(k for k, s in wanted.items() if s), frozenset(k for k, s in wanted.items() if not s), source
    )


def _pulumi_config(pulumi: str, stack: str, project_dir: Path) -> dict[str, Any]:
    """`pulumi config --json`: `{"project:key": {"value"?, "objectValue"?, "secret": bool}}`, with no value
    for a secret (pulumi/pulumi pkg/cmd/pulumi/config, `configValueJSON`)."""
    result = subprocess.run(
        [pulumi, "config", "--json", "--stack", stack, "--cwd", str(project_dir)],
        capture_output=True,
        text=True,
        timeout=PULUMI_TIMEOUT_SECONDS,
        env={**os.environ, "PULUMI_SKIP_UPDATE_CHECK": "true"},
        check=False,
    )
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        raise ValueError(lines[-1] if lines else f"exit status {result.returncode}")
    listed = json.loads(result.stdout)
    if not isinstance(listed, dict):
        raise ValueError("its output is not a JSON object")
    return listed
