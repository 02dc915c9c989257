"""Placeholders for the secrets a committed stack requires but its stack file cannot hold.

This repository's stack files have no secrets provider, so a secret a committed stack requires out of band
(`OUT_OF_BAND_SECRETS`: the gateway's `gatewayMasterKey` in prod, set before `up` as the stack file says)
cannot be committed honestly. Asked explicitly (`python -m tools.render --secret-placeholders`, what `make
render` runs), the render supplies "[secret]" for each of them that the config requires and the file lacks,
and names them in its output and in summary.md. Any other missing secret is still the error `pulumi up` reports.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving_stack.config import ConfigError, StackConfig, parse_stack_config
from serving_stack.config.gateway import MASTER_KEY_SECRET
from serving_stack.config.secrets import required_secrets
from tools.stack_files import PROJECT_DIR, SECRET, project_name, stack_config

OUT_OF_BAND_SECRETS = (MASTER_KEY_SECRET,)


@dataclass(frozen=True)
class StackInputs:
    """What the engine hands the program of `project` (`project:key` -> value, secret keys) and the secrets
    the render made up: `placeholders` maps each to the setting that requires it."""

    project: str
    config: dict[str, Any]
    secret_keys: list[str]
    placeholders: dict[str, str]

    def stack_config(self) -> StackConfig:
        return stack_config_of(self.config, self.project)

    def note(self, stack: str) -> str:
        """One line for stderr and summary.md, or "" when nothing was made up."""
        if not self.placeholders:
            return ""
        listed = ", ".join(f"`{key}` ({why})" for key, why in self.placeholders.items())
        return (
            f"Rendered with placeholder secrets, not in Pulumi.{stack}.yaml: {listed}. `pulumi up` needs each: "
            f"`pulumi config set --secret <key> <value> --stack {stack}`."
        )


def _value(value: Any) -> Any:
    try:
        return json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        return value


def stack_config_of(config: Mapping[str, Any], project: str) -> StackConfig:
    """The typed config the program would read (secret values are not part of it)."""
    prefix = f"{project}:"
    return parse_stack_config({k[len(prefix) :]: _value(v) for k, v in config.items() if k.startswith(prefix)})


def with_placeholders(config: Mapping[str, Any], secret_keys: list[str], project: str) -> StackInputs:
    """The stack's inputs plus "[secret]" for each out-of-band secret the config requires and the file
    lacks. A config that does not parse gets none: the program reports that error itself."""
    try:
        required = required_secrets(stack_config_of(config, project))
    except ConfigError:
        required = {}
    missing = {k: why for k, why in required.items() if k in OUT_OF_BAND_SECRETS and f"{project}:{k}" not in config}
    placed = {f"{project}:{key}": SECRET for key in missing}
    return StackInputs(project, {**config, **placed}, [*secret_keys, *placed], missing)


def stack_inputs(stack: str, project_dir: Path = PROJECT_DIR, *, placeholders: bool) -> StackInputs:
    """`Pulumi.<stack>.yaml` as the engine hands it over, with placeholders only when asked for."""
    config, secret_keys = stack_config(stack, project_dir)
    project = project_name(project_dir)
    return (
        with_placeholders(config, secret_keys, project)
        if placeholders
        else StackInputs(project, config, secret_keys, {})
    )
