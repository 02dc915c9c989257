"""Reading `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI hands config to a program, every
malformed file one bounded `ConfigError` line (exit 2), never a traceback.

The file is read by the project's one strict reader (`serving_stack.facts.strict_files`, its stack-file mode)
with plain scalars resolved as the pinned CLI's go-yaml v3 resolves them (`tools/cli_yaml.py`: `yes` and
`22:30` are strings, `0o17` and `1e5` numbers). Refused as the CLI refuses them, each naming the config key
path: a duplicate key, a key set both bare and with the project's prefix (the CLI keeps one at random), a
`secure:` value that is not ciphertext, `.inf`/`.nan`, a mapping key that is not a string.
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
            if not isinstance(key, str):
                raise _not_a_string(f"{path}.{bounded(key, quote=False)}", key)
            _check_values(item, f"{path}.{bounded(key, quote=False)}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_values(item, f"{path}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(path, f"{value} is not a number the Pulumi CLI can pass (it refuses the file)")


def is_ciphertext(value: str) -> bool:
    """Whether a `secure:` value has the shape of a secrets provider's ciphertext (not plain text)."""
    try:
        return (
            bool(PASSPHRASE_CIPHERTEXT.fullmatch(value))
            or len(base64.b64decode(value, validate=True)) >= MIN_CIPHERTEXT_BYTES
        )
    except (binascii.Error, ValueError):
        return False


def cli_value(value: Any) -> str:
    """A top-level config value as the CLI hands it to the program: a string as written, null as the empty
    string, anything else as JSON (`config.Value.Value`)."""
    if isinstance(value, str) or value is None:
        return value or ""
    return json.dumps(as_json_value(value), separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def parse_yaml(text: str, name: str) -> Any:
    """One YAML document of a file called `name`, read as the Pulumi CLI reads it, checked."""
    documents = strict_files.parse_yaml(text, name, name, plain_scalars=resolve_plain)
    if len(documents) > 1:
        raise ConfigError(name, f"holds {len(documents)} YAML documents; a stack file is one")
    return documents[0] if documents else None


def read_yaml(path: Path) -> Any:
    """One YAML document (a project or stack file), read as the CLI reads it; problems name the file (and line)."""
    return parse_yaml(strict_files.read_text(path, path.name, path.name), path.name)


def project_name(project_dir: Path = PROJECT_DIR) -> str:
    project_file = read_yaml(project_dir / "Pulumi.yaml")
    if not isinstance(project_file, dict) or not isinstance(project_file.get("name"), str):
        raise ConfigError("Pulumi.yaml", "is not a Pulumi project file (a mapping with a name)")
    return str(project_file["name"])


def stack_names(project_dir: Path = PROJECT_DIR) -> list[str]:
    """Every stack with a `Pulumi.<stack>.yaml` in the project, sorted."""
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in project_dir.glob("Pulumi.*.yaml"))


def stack_config(stack: str, project_dir: Path = PROJECT_DIR) -> tuple[dict[str, Any], list[str]]:
    """The config of `Pulumi.<stack>.yaml` as the engine hands it to a program: `project:key` -> value
    (objects as JSON), plus the keys that are secrets. `secure:` values become `"[secret]"`: an offline
    render never sees a real secret."""
    project = project_name(project_dir)
    stack_file = project_dir / f"Pulumi.{stack}.yaml"
    if not stack_file.is_file():
        raise ConfigError(
            "--stack", f"stack {bounded(stack)} has no {stack_file.name}", ", ".join(stack_names(project_dir)) or "none"
        )
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
        bad = [key for key in mapping if not isinstance(key, str)]
        if bad:
            raise _not_a_string(f"{prefix}{bounded(bad[0], quote=False)}", bad[0])
    config: dict[str, Any] = {}
    secret_keys: list[str] = []
    written: dict[str, str] = {}  # project:key -> the key as the file spells it
    for key, value in values.items():
        full_key = key if ":" in key else f"{project}:{key}"
        label = bounded(full_key.removeprefix(f"{project}:"), quote=False)
        if full_key in written:
            twice = (
                f"is set twice, as {bounded(written[full_key])} and {bounded(key)} (the Pulumi CLI keeps one at random)"
            )
            raise ConfigError(label, twice, "one of them")
        written[full_key] = key
        _check_values(value, label)
        if not (isinstance(value, dict) and set(value) == {"secure"}):
            config[full_key] = cli_value(value)
            continue
        if not isinstance(value["secure"], str):
            fix = "pulumi config set --secret <key> <value>"
            raise ConfigError(label, f"secure: is {bounded(value['secure'])}, not a ciphertext", fix)
        if not is_ciphertext(value["secure"]):
            problem = "secure: holds plain text, not a secrets provider's ciphertext"
            raise ConfigError(label, problem, f"pulumi config set --secret {label} <value>")
        config[full_key] = SECRET
        secret_keys.append(full_key)
    return config, secret_keys
