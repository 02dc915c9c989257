"""The stack the preflight judges, read through the project's own loader, and which of its secrets are set.

The stack file is read as `make render` reads it (`tools.stack_files`, `tools.secret_placeholders`): a bad
file or config key is a `ConfigError` naming the key (exit 2). The program then runs once under the mock
runtime (`tools.mock_runtime.run_program`, what the render runs), which yields the plan (pools, endpoints,
targets) and every Kubernetes object the stack writes; the checks read those, never a second derivation.

Secrets: which settings need which secret comes from `serving_stack.config.secrets`. Which secrets are set
comes from `pulumi config --json` when the Pulumi CLI is on PATH (secret values are never read: the CLI
prints no value for a secret without `--show-secrets`), else from the stack file's `secure:` values, with a
note saying so. The program is run with a placeholder for every secret it needs, so that the other checks
still run; each missing one is a blocker.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving_stack.config import StackConfig
from serving_stack.config.secrets import SecretNeed, secret_needs
from serving_stack.config.stack import SECRET_KEYS
from serving_stack.errors import bounded
from serving_stack.plan.stack import StackPlan
from tools.mock_runtime import PROJECT_DIR, run_program
from tools.preflight.findings import Finding, blocker, note, warning
from tools.render import HELM_RELEASE, kubernetes_objects
from tools.secret_placeholders import stack_config_of
from tools.stack_files import SECRET, read_yaml, stack_config

PULUMI_TIMEOUT_SECONDS = 60
JSON = dict[str, Any]


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
    """The secret keys the stack sets (`plain`: set without `--secret`, which `up` refuses) and how that was
    read."""

    secret: frozenset[str]
    plain: frozenset[str]
    source: Finding


def load_stack(stack: str, project_dir: Path = PROJECT_DIR) -> tuple[PreflightStack, list[Finding]]:
    """The stack and the findings about its secrets and placeholders; a `ConfigError` for bad input."""
    config, secret_keys = stack_config(stack, project_dir)
    project = str(read_yaml(project_dir / "Pulumi.yaml")["name"])
    typed = stack_config_of(config, project)
    set_secrets = read_set_secrets(stack, project, project_dir, config, secret_keys)
    needs = secret_needs(typed)
    findings = [set_secrets.source, *secret_findings(stack, needs, set_secrets)]
    placed = {f"{project}:{need.key}": SECRET for need in needs if f"{project}:{need.key}" not in secret_keys}
    with contextlib.redirect_stderr(io.StringIO()):  # the program's own warnings: `make render` shows them
        run = run_program(
            {**config, **placed}, [*secret_keys, *placed], stack=stack, project_dir=project_dir, allow_placeholders=True
        )
    assert run.plan is not None, "the program always builds its plan"
    records = [r.to_json() for r in run.resources]
    findings += [
        blocker(p.key, f"{p.value} is a placeholder ({p.what}) that `pulumi up` refuses", f"set {p.set_to}")
        for p in run.plan.placeholders
    ]
    preflight = PreflightStack(
        name=stack,
        config=typed,
        plan=run.plan,
        objects=tuple(kubernetes_objects(records)),
        releases=tuple(r["inputs"] for r in records if r["type"] == HELM_RELEASE),
    )
    return preflight, findings


def secret_findings(stack: str, needs: list[SecretNeed], set_secrets: SetSecrets) -> list[Finding]:
    findings = []
    for key in sorted(set_secrets.plain):
        findings.append(
            blocker(
                key,
                "is set in plain text; `pulumi up` refuses a secret that is not a Pulumi secret",
                f"pulumi config rm {key} --stack {stack}, then pulumi config set --secret {key} <value> --stack {stack}",
            )
        )
    reported: set[str] = set()
    for need in needs:
        if need.key in set_secrets.secret or need.key in set_secrets.plain or need.key in reported:
            continue
        reported.add(need.key)
        findings.append(
            blocker(
                need.key,
                f"secret not set; needed because {need.why}",
                f"pulumi config set --secret {need.key} <value> --stack {stack}",
            )
        )
    return findings


def read_set_secrets(
    stack: str, project: str, project_dir: Path, file_config: dict[str, Any], file_secret_keys: list[str]
) -> SetSecrets:
    """The secret keys set, from the Pulumi CLI when it is on PATH and answers, else from the stack file."""
    pulumi = shutil.which("pulumi")
    cli_failure = ""
    if pulumi is not None:
        try:
            listed = _pulumi_config(pulumi, stack, project_dir)
        except (OSError, subprocess.SubprocessError, ValueError) as error:
            cli_failure = bounded(str(error), 200, quote=False)
        else:
            return _set_secrets(
                {k: bool(v.get("secret")) for k, v in listed.items() if isinstance(v, dict)},
                project,
                note("secrets", f"read with `pulumi config --json --stack {stack}`", "the values were not read"),
            )
    how = (
        f"`pulumi config` failed ({cli_failure})"
        if cli_failure
        else "the Pulumi CLI is not on PATH (https://www.pulumi.com/docs/install/)"
    )
    return _set_secrets(
        {key: key in file_secret_keys for key in file_config},
        project,
        warning(
            "secrets",
            f"{how}: judged from Pulumi.{stack}.yaml's secure: values only; a secret set through a Pulumi ESC "
            "environment is not seen",
            f"install the CLI and `pulumi login`, then rerun `make preflight STACK={stack}`",
        ),
    )


def _set_secrets(keys: dict[str, bool], project: str, source: Finding) -> SetSecrets:
    """`keys`: full config key (`project:key`) -> whether it is a secret."""
    names = {key.removeprefix(f"{project}:"): secret for key, secret in keys.items() if key.startswith(f"{project}:")}
    wanted = {name: secret for name, secret in names.items() if name in SECRET_KEYS}
    return SetSecrets(
        secret=frozenset(name for name, secret in wanted.items() if secret),
        plain=frozenset(name for name, secret in wanted.items() if not secret),
        source=source,
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
