"""Reading `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI hands config to a program, with
every malformed file reported as one bounded `ConfigError` line (exit 2), never a traceback.

Plain scalars are resolved as the pinned CLI's YAML library (go-yaml v3) resolves them and values reach
the program as the CLI passes them (`tools/cli_yaml.py`: `yes` and `22:30` are strings, `0o17` and `1e5`
numbers, dates Go's time strings). A duplicate key is an error, as in the CLI; so is a key set both bare
and with the project's prefix (`kubernetes` and `nemotron-lightning:kubernetes`: the CLI keeps one of them
at random), a `secure:` value that is not ciphertext, and `.inf`/`.nan` (the CLI refuses the file).
The file is read by the project's one strict reader (`serving_stack.facts.strict_files`, its stack-file
mode with those scalar rules): anchors and aliases are allowed but the expanded document is bounded in size
and depth; merge keys (`<<`) are refused; every mapping key must be a string. Problems inside `config:` name
the config key path (`modelCache.size`), like every other config error.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from pathlib import Path
from typing import Any

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import strict_files
from serving_stack.facts.strict_files import load_yaml_documents
from tools.cli_yaml import as_json_value, resolve_plain

PROJECT_DIR = Path(__file__).resolve().parent.parent
SECRET = "[secret]"
# Ciphertext as Pulumi's secrets providers write it (sdk/go/common/resource/config/crypt.go): the passphrase
# provider `v1:<base64 nonce>:<base64 AES-GCM ciphertext>`, the service and cloud KMS providers standard
# base64. AES-GCM adds a 12-byte nonce and a 16-byte tag, so no ciphertext is shorter than 28 bytes.
PASSPHRASE_CIPHERTEXT = re.compile(r"v1:[A-Za-z0-9+/]{16}:[A-Za-z0-9+/]+={0,2}")
MIN_CIPHERTEXT_BYTES = 28


YAML_KINDS = {bool: "a boolean (true, false)", int: "a number", float: "a number", type(None): "null"}


def _not_a_string(path: str, key: Any) -> ConfigError:
    """The Pulumi CLI's YAML reads the keys `1:`, `true:` and `~:` as a number, a boolean and null."""
    kind = YAML_KINDS.get(type(key), f"a {type(key).__name__}")
    return ConfigError(path, f"YAML reads the key {bounded(key)} as {kind}, not a string", "a quoted key")


def _check_values(value: Any, path: str) -> None:
    """Every mapping key a string and every number finite, at any depth (the CLI cannot pass `.inf`)."""
    if isinstance(value, dict):
        for key, item in value.items():
            item_path = f"{path}.{bounded(key, quote=False)}"
            if not isinstance(key, str):
                raise _not_a_string(item_path, key)
            _check_values(item, item_path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_values(item, f"{path}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(path, f"{value} is not a number the Pulumi CLI can pass (it refuses the file)")


def is_ciphertext(value: str) -> bool:
    """Whether a `secure:` value has the shape of a secrets provider's ciphertext (not plain text)."""
    if PASSPHRASE_CIPHERTEXT.fullmatch(value):
        return True
    try:
        return len(base64.b64decode(value, validate=True)) >= MIN_CIPHERTEXT_BYTES
    except (binascii.Error, ValueError):
        return False


def cli_value(value: Any) -> str:
    """A top-level config value as the CLI hands it to the program: a string as written, null as the empty
    string, anything else as JSON (`config.Value.Value`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(as_json_value(value), separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def read_yaml(path: Path) -> Any:
    """One YAML document, read by the project's strict reader as the CLI reads stack files; problems are
    `ConfigError`s naming the file (and line)."""
    return _one_document(load_yaml_documents(path, path.name, plain_scalars=resolve_plain), path.name)


def parse_yaml(text: str, name: str) -> Any:
    """One YAML document of a file called `name`, read as the Pulumi CLI reads it, checked."""
    return _one_document(strict_files.parse_yaml(text, name, name, plain_scalars=resolve_plain), name)


def _one_document(documents: list[Any], name: str) -> Any:
    if len(documents) > 1:
        raise ConfigError(name, f"holds {len(documents)} YAML documents; a stack file is one")
    return documents[0] if documents else None


def stack_config(stack: str, project_dir: Path = PROJECT_DIR) -> tuple[dict[str, Any], list[str]]:
    """The config of `Pulumi.<stack>.yaml` as the engine hands it to a program: `project:key` -> value
    (objects as JSON), plus the keys that are secrets. `secure:` values become `"[secret]"`: an offline
    render never sees a real secret."""
    project_file = read_yaml(project_dir / "Pulumi.yaml")
    if not isinstance(project_file, dict) or not isinstance(project_file.get("name"), str):
        raise ConfigError("Pulumi.yaml", "is not a Pulumi project file (a mapping with a name)")
    project = project_file["name"]
    stack_file = project_dir / f"Pulumi.{stack}.yaml"
    if not stack_file.is_file():
        available = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in project_dir.glob("Pulumi.*.yaml"))
        raise ConfigError("--stack", f"stack {bounded(stack)} has no {stack_file.name}", ", ".join(available) or "none")
    return stack_file_config(read_yaml(stack_file), project, stack_file.name)


def stack_file_config(document: Any, project: str, name: str) -> tuple[dict[str, Any], list[str]]:
    """The config of a read stack file (`parse_yaml`) as the engine hands it to the program of `project`."""
    document = document or {}
    if not isinstance(document, dict):
        raise ConfigError(name, f"the top level is a {type(document).__name__}, not a mapping")
    values = document.get("config") or {}
    if not isinstance(values, dict):
        raise ConfigError(f"{name}: config", f"is a {type(values).__name__}, not a mapping of keys")
    for prefix, mapping in ((f"{name}: ", document), (f"{name}: config.", values)):
        for key in mapping:
            if not isinstance(key, str):
                raise _not_a_string(f"{prefix}{bounded(key, quote=False)}", key)
    config: dict[str, Any] = {}
    secret_keys: list[str] = []
    written: dict[str, str] = {}  # project:key -> the key as the file spells it
    for key, value in values.items():
        full_key = key if ":" in key else f"{project}:{key}"
        label = bounded(full_key.removeprefix(f"{project}:"), quote=False)
        if full_key in written:
            raise ConfigError(
                label,
                f"is set twice, as {bounded(written[full_key])} and {bounded(key)} (the Pulumi CLI keeps one at random)",
                "one of them",
            )
        written[full_key] = key
        _check_values(value, label)
        if isinstance(value, dict) and set(value) == {"secure"} and isinstance(value["secure"], str):
            if not is_ciphertext(value["secure"]):
                raise ConfigError(
                    label,
                    "secure: holds plain text, not a secrets provider's ciphertext",
                    f"pulumi config set --secret {label} <value>",
                )
            config[full_key] = SECRET
            secret_keys.append(full_key)
        elif isinstance(value, dict) and set(value) == {"secure"}:
            raise ConfigError(
                label,
                f"secure: is {bounded(value['secure'])}, not a ciphertext",
                "pulumi config set --secret <key> <value>",
            )
        else:
            config[full_key] = cli_value(value)
    return config, secret_keys
