"""Reading `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI hands config to a program, with
every malformed file reported as one bounded `ConfigError` line (exit 2), never a traceback.

Plain scalars are resolved as the pinned CLI's YAML library (go-yaml v3) resolves them and values reach
the program as the CLI passes them (`tools/cli_yaml.py`: `yes` and `22:30` are strings, `0o17` and `1e5`
numbers, dates Go's time strings). A duplicate key is an error, as in the CLI; so is a key set both bare
and with the project's prefix (`kubernetes` and `nemotron-lightning:kubernetes`: the CLI keeps one of them
at random), a `secure:` value that is not ciphertext, and `.inf`/`.nan` (the CLI refuses the file).
Anchors and aliases are allowed but the expanded document is bounded in size and depth (a few aliased
lines can otherwise expand to gigabytes, and a recursive alias or deep nesting overflows Python's stack);
merge keys (`<<`) are refused; every mapping key must be a string. Problems inside `config:` name the
config key path (`modelCache.size`), like every other config error.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from pathlib import Path
from typing import Any, Optional

import yaml

from serving_stack.errors import ConfigError, bounded
from tools.cli_yaml import as_json_value, resolve_plain

PROJECT_DIR = Path(__file__).resolve().parent.parent
SECRET = "[secret]"
MAX_NODES = 100_000  # scalars, sequences and mappings after alias expansion
MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 32  # nesting levels: the stack config nests about 8 deep, Helm values a few more
MERGE_TAG = "tag:yaml.org,2002:merge"
PLAIN_TAG = "tag:nemotron,2026:cli-plain"  # every unquoted scalar: resolved by `resolve_plain`
# Ciphertext as Pulumi's secrets providers write it (sdk/go/common/resource/config/crypt.go): the passphrase
# provider `v1:<base64 nonce>:<base64 AES-GCM ciphertext>`, the service and cloud KMS providers standard
# base64. AES-GCM adds a 12-byte nonce and a 16-byte tag, so no ciphertext is shorter than 28 bytes.
PASSPHRASE_CIPHERTEXT = re.compile(r"v1:[A-Za-z0-9+/]{16}:[A-Za-z0-9+/]+={0,2}")
MIN_CIPHERTEXT_BYTES = 28


class _StackLoader(yaml.SafeLoader):
    """PyYAML's parser with go-yaml v3's scalar resolution (`tools/cli_yaml.py`) that refuses duplicate
    keys, merge keys and nesting deeper than MAX_DEPTH (PyYAML's composer recurses once per level)."""

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
    "<": [(MERGE_TAG, re.compile(r"^(?:<<)$"))],
    None: [(PLAIN_TAG, re.compile(""))],  # PyYAML tries the first-character resolvers, then these
}
_StackLoader.add_constructor(PLAIN_TAG, lambda loader, node: resolve_plain(node.value))


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
    """One YAML document, checked; problems are `ConfigError`s naming the file (and line)."""
    if not path.is_file():
        raise ConfigError(path.name, "file not found")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ConfigError(path.name, f"{path.stat().st_size} bytes; a stack file is at most {MAX_FILE_BYTES}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(path.name, "is not UTF-8 text") from None
    return parse_yaml(text, path.name)


def parse_yaml(text: str, name: str) -> Any:
    """One YAML document of a file called `name`, read as the Pulumi CLI reads it, checked."""
    try:
        document = yaml.load(text, Loader=_StackLoader)
    except RecursionError:  # a construct PyYAML recurses on that MAX_DEPTH does not catch
        raise ConfigError(name, "nests too deeply to read") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(name, f"is not valid YAML{where}: {bounded(problem, quote=False)}") from None
    _check_size(document, name, [MAX_NODES])
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
