"""Reading `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI hands config to a program, with
every malformed file reported as one bounded `ConfigError` line (exit 2), never a traceback.

YAML is read by the project's one strict reader (`serving_stack.facts.strict_files`, in its stack-file mode:
dates stay strings, as the CLI reads them): a duplicate key is an error; anchors and aliases are allowed but
the expanded document is bounded in size and depth; merge keys (`<<`) are refused; every mapping key must be a
string. Problems inside `config:` name the config key path (`modelCache.size`), like every other config error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.strict_files import load_yaml_documents

PROJECT_DIR = Path(__file__).resolve().parent.parent
SECRET = "[secret]"
YAML_KINDS = {bool: "a boolean (yes, no, on, off, true, false)", int: "a number", float: "a number", type(None): "null"}


def _not_a_string(path: str, key: Any) -> ConfigError:
    """YAML reads the keys `1:`, `yes:` and `~:` as a number, a boolean and null."""
    kind = YAML_KINDS.get(type(key), f"a {type(key).__name__}")
    return ConfigError(path, f"YAML reads the key {bounded(key)} as {kind}, not a string", "a quoted key")


def _check_keys(value: Any, path: str) -> None:
    """Every mapping key a string, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            item_path = f"{path}.{bounded(key, quote=False)}"
            if not isinstance(key, str):
                raise _not_a_string(item_path, key)
            _check_keys(item, item_path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_keys(item, f"{path}[{index}]")


def read_yaml(path: Path) -> Any:
    """One YAML document, read by the project's strict reader as the CLI reads stack files; problems are
    `ConfigError`s naming the file (and line)."""
    documents = load_yaml_documents(path, path.name, stack_file=True)
    if len(documents) > 1:
        raise ConfigError(path.name, f"holds {len(documents)} YAML documents; a stack file is one")
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
    document = read_yaml(stack_file) or {}
    if not isinstance(document, dict):
        raise ConfigError(stack_file.name, f"the top level is a {type(document).__name__}, not a mapping")
    values = document.get("config") or {}
    if not isinstance(values, dict):
        raise ConfigError(f"{stack_file.name}: config", f"is a {type(values).__name__}, not a mapping of keys")
    for prefix, mapping in ((f"{stack_file.name}: ", document), (f"{stack_file.name}: config.", values)):
        for key in mapping:
            if not isinstance(key, str):
                raise _not_a_string(f"{prefix}{bounded(key, quote=False)}", key)
    config: dict[str, Any] = {}
    secret_keys: list[str] = []
    for key, value in values.items():
        full_key = key if ":" in key else f"{project}:{key}"
        _check_keys(value, bounded(full_key.removeprefix(f"{project}:"), quote=False))
        if isinstance(value, dict) and set(value) == {"secure"}:
            if not isinstance(value["secure"], str) or not value["secure"].strip():
                raise ConfigError(
                    bounded(full_key.removeprefix(f"{project}:"), quote=False),
                    f"secure: is {bounded(value['secure'])}, not a ciphertext",
                    "pulumi config set --secret <key> <value>",
                )
            config[full_key] = SECRET
            secret_keys.append(full_key)
        else:
            config[full_key] = value if isinstance(value, str) else json.dumps(value)
    return config, secret_keys
