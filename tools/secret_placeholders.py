"""Placeholders for the secrets a committed stack requires but its stack file cannot hold.

A real `Pulumi.<stack>.yaml` holds each secret as `secure:` ciphertext that only that stack's secrets
provider decrypts (`pulumi config set --secret`); the offline render reads such a value as "[secret]".
This repository's stack files have no secrets provider, so a secret a committed stack requires (the
gateway's `gatewayMasterKey` in prod) cannot be committed honestly: fake ciphertext would fail the first
real `pulumi up`. Those secrets are listed here (`OUT_OF_BAND_SECRETS`: set before `up`, as the stack file
says). Asked explicitly (`python -m tools.render --secret-placeholders`, what `make render` runs), the
render supplies "[secret]" for each of them that the config requires and the file lacks, and names them
in its output and in summary.md. Any other missing secret (`ngcApiKey` for a pull Secret) is still the
error `pulumi up` would report; without the flag, so is every one.
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
from tools.stack_files import PROJECT_DIR, SECRET, read_yaml, stack_config

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


def stack_config_of(config: Mapping[str, Any], project: str) -> StackConfig:
    """The typed config the program would read (secret values are not part of it)."""
    prefix = f"{project}:"
    raw: dict[str, Any] = {}
    for full_key, value in config.items():
        if full_key.startswith(prefix):
            try:
                raw[full_key[len(prefix) :]] = json.loads(value) if isinstance(value, str) else value
            except json.JSONDecodeError:
                raw[full_key[len(prefix) :]] = value
    return parse_stack_config(raw)


def with_placeholders(config: Mapping[str, Any], secret_keys: list[str], project: str) -> StackInputs:
    """The stack's inputs plus "[secret]" for each out-of-band secret the config requires and the file
    lacks. A config that does not parse gets none: the program reports that error itself."""
    try:
        required = required_secrets(stack_config_of(config, project))
    except ConfigError:
        return StackInputs(project, dict(config), list(secret_keys), {})
    missing = {
        key: why for key, why in required.items() if key in OUT_OF_BAND_SECRETS and f"{project}:{key}" not in config
    }
    placed = {f"{project}:{key}": SECRET for key in missing}
    return StackInputs(project, {**config, **placed}, [*secret_keys, *placed], missing)


def stack_inputs(stack: str, project_dir: Path = PROJECT_DIR, *, placeholders: bool) -> StackInputs:
    """`Pulumi.<stack>.yaml` as the engine hands it over, with placeholders only when asked for."""
    config, secret_keys = stack_config(stack, project_dir)
    project = read_yaml(project_dir / "Pulumi.yaml")["name"]
    if not placeholders:
        return StackInputs(project, config, secret_keys, {})
    return with_placeholders(config, secret_keys, project)
