"""Reading `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI hands config to a program, with
every malformed file reported as one bounded `ConfigError` line (exit 2), never a traceback.

YAML is read as the CLI's parser reads it into config values: dates stay strings; a duplicate key is an
error; anchors and aliases are allowed but the expanded document is bounded (a few aliased lines can
otherwise expand to gigabytes); every mapping key must be a string.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from serving_stack.errors import ConfigError, bounded

PROJECT_DIR = Path(__file__).resolve().parent.parent
SECRET = "[secret]"
MAX_NODES = 100_000  # scalars, sequences and mappings after alias expansion
MAX_FILE_BYTES = 1_000_000


class _StackLoader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver (dates stay strings) that refuses duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (list, dict)):
                raise yaml.constructor.ConstructorError(None, None, "a mapping key is not a scalar", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {bounded(key)}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StackLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _check_shape(value: Any, path: str, budget: list[int]) -> None:
    """Every key a string, and the expanded document within MAX_NODES (aliases count every time)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise ConfigError(path or "config", f"the document expands to more than {MAX_NODES} values (YAML aliases?)")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ConfigError(f"{path}.{key}" if path else str(key), f"key {bounded(key)} is not a string")
            _check_shape(item, f"{path}.{key}" if path else key, budget)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_shape(item, f"{path}[{index}]", budget)


def read_yaml(path: Path) -> Any:
    """One YAML document, checked; problems are `ConfigError`s naming the file (and line)."""
    if not path.is_file():
        raise ConfigError(path.name, "file not found")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ConfigError(path.name, f"{path.stat().st_size} bytes; a stack file is at most {MAX_FILE_BYTES}")
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_StackLoader)  # noqa: S506 (a SafeLoader)
    except UnicodeDecodeError:
        raise ConfigError(path.name, "is not UTF-8 text") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(path.name, f"is not valid YAML{where}: {bounded(problem, quote=False)}") from None
    _check_shape(document, "", [MAX_NODES])
    return document


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
        available = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in project_dir.glob("Pulumi.*.yaml"))
        raise ConfigError("--stack", f"stack {bounded(stack)} has no {stack_file.name}",
                          ", ".join(available) or "none")
    document = read_yaml(stack_file) or {}
    if not isinstance(document, dict):
        raise ConfigError(stack_file.name, f"the top level is a {type(document).__name__}, not a mapping")
    values = document.get("config") or {}
    if not isinstance(values, dict):
        raise ConfigError(f"{stack_file.name}: config", f"is a {type(values).__name__}, not a mapping of keys")
    config: dict[str, Any] = {}
    secret_keys: list[str] = []
    for key, value in values.items():
        full_key = key if ":" in key else f"{project}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[full_key] = SECRET
            secret_keys.append(full_key)
        else:
            config[full_key] = value if isinstance(value, str) else json.dumps(value)
    return config, secret_keys
