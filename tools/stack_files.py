"""Reading `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI hands config to a program, with
every malformed file reported as one bounded `ConfigError` line (exit 2), never a traceback.

YAML is read as the CLI's parser reads it into config values: dates stay strings; a duplicate key is an
error; anchors and aliases are allowed but the expanded document is bounded in size and depth (a few
aliased lines can otherwise expand to gigabytes, and a recursive alias or deep nesting overflows
Python's stack); merge keys (`<<`) are refused; every mapping key must be a string. Problems inside
`config:` name the config key path (`modelCache.size`), like every other config error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import yaml

from serving_stack.errors import ConfigError, bounded

PROJECT_DIR = Path(__file__).resolve().parent.parent
SECRET = "[secret]"
MAX_NODES = 100_000  # scalars, sequences and mappings after alias expansion
MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 32  # nesting levels: the stack config nests about 8 deep, Helm values a few more
MERGE_TAG = "tag:yaml.org,2002:merge"


class _StackLoader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver (dates stay strings) that refuses duplicate keys, merge
    keys and nesting deeper than MAX_DEPTH (PyYAML's composer recurses once per level)."""

    _depth = 0

    def compose_node(self, parent: Optional[yaml.Node], index: Any) -> Optional[yaml.Node]:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(None, None, f"nests deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                raise yaml.constructor.ConstructorError(
                    None, None, "merge keys (<<) are not supported: repeat the values instead", key_node.start_mark
                )
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (list, dict)):
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key is not a scalar", key_node.start_mark
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {bounded(key)}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StackLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _check_size(value: Any, label: str, budget: list[int], depth: int = 0) -> None:
    """The document as the program would see it, aliases expanded, within MAX_NODES values and MAX_DEPTH
    levels (a recursive alias is infinitely deep)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise ConfigError(label, f"the document expands to more than {MAX_NODES} values (YAML aliases?)")
    if depth > MAX_DEPTH:
        raise ConfigError(label, f"the document nests deeper than {MAX_DEPTH} levels (a recursive YAML alias?)")
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in children:
        _check_size(item, label, budget, depth + 1)


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
    """One YAML document, checked; problems are `ConfigError`s naming the file (and line)."""
    if not path.is_file():
        raise ConfigError(path.name, "file not found")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ConfigError(path.name, f"{path.stat().st_size} bytes; a stack file is at most {MAX_FILE_BYTES}")
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_StackLoader)
    except UnicodeDecodeError:
        raise ConfigError(path.name, "is not UTF-8 text") from None
    except RecursionError:  # a construct PyYAML recurses on that MAX_DEPTH does not catch
        raise ConfigError(path.name, "nests too deeply to read") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(path.name, f"is not valid YAML{where}: {bounded(problem, quote=False)}") from None
    _check_size(document, path.name, [MAX_NODES])
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
