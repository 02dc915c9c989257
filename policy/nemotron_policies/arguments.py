"""What a container is told: its command line and env values, resolved the way Kubernetes and a shell
resolve them, wherever the value comes from.

- `$(VAR)` in `command`/`args` is expanded from the container's env (Kubernetes does this, anywhere in an
  argument); a shell script (`sh -c '...'`, `bash -lc '...'`) is split into words and its `$VAR` / `${VAR}`
  expanded from the env as well.
- An env value is a literal, a ConfigMap key (`valueFrom.configMapKeyRef`, or `envFrom.configMapRef` with
  its `prefix`) read from the ConfigMaps of the stack, or `Opaque` when the pack cannot read it (a Secret, a
  ConfigMap outside the stack, a field of the pod).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any, Optional, Union

from .kinds import kubernetes_objects
from .values import UNKNOWN, as_list, dig, plain, text

SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
K8S_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
SHELL_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class Opaque(str):
    """A value the pack cannot read; the text says where it comes from."""


Resolved = Union[None, str, Opaque, Any]  # None: absent; Any: the UNKNOWN marker


def _name(value: Any) -> bool:
    """Can this be (part of) a ConfigMap's identity? A string, or None for the namespace of a cluster object."""
    return value is None or isinstance(value, str)


class ConfigMaps:
    """ConfigMap data of a stack by (namespace, name), inline objects of YAML components included."""

    def __init__(self, resources: Iterable[Any]) -> None:
        self.data: dict[tuple[Any, Any], Any] = {}
        for resource in resources:
            for obj in kubernetes_objects(resource.resource_type, plain(resource.props)):
                if obj.kind == "ConfigMap" and obj.group == "" and _name(obj.namespace) and _name(obj.name):
                    self.data[(obj.namespace, obj.name)] = dig(obj.body, "data")

    def data_of(self, namespace: Any, name: Any) -> Any:
        """The data of a ConfigMap of the stack; `UNKNOWN` when unknown or not in the stack."""
        return self.data.get((namespace, name), UNKNOWN) if _name(namespace) and _name(name) else UNKNOWN

    def value(self, namespace: Any, name: Any, key: Any) -> Resolved:
        data = self.data.get((namespace, name)) if _name(namespace) and _name(name) else None
        if data is None:
            if UNKNOWN in (namespace, name, key):
                return UNKNOWN
            return Opaque(f"ConfigMap {name} key {key} (not in this stack)")
        return UNKNOWN if data is UNKNOWN else dig(data, key)


def env_value(container: dict[str, Any], name: str, namespace: Any, config_maps: ConfigMaps) -> Resolved:
    """The value a container's env variable `name` has, as far as the pack can read it."""
    env = container.get("env")
    if env is UNKNOWN:
        return UNKNOWN
    for entry in reversed(as_list(env)):
        if not isinstance(entry, dict) or entry.get("name") != name:
            continue
        if "value" in entry:
            return entry["value"]
        source = dig(entry, "valueFrom")
        ref = dig(source, "configMapKeyRef")
        if isinstance(ref, dict):
            return config_maps.value(namespace, ref.get("name"), ref.get("key"))
        if source is UNKNOWN:
            return UNKNOWN
        kind = next(iter(source), "valueFrom") if isinstance(source, dict) else "valueFrom"
        reference = dig(source, kind)
        detail = f" {dig(reference, 'name')} key {dig(reference, 'key')}" if kind == "secretKeyRef" else ""
        return Opaque(f"env {name} ({kind}{detail})")
    for entry in reversed(as_list(container.get("envFrom"))):
        prefix = text(dig(entry, "prefix")) or ""
        if not name.startswith(prefix):
            continue
        config_map = dig(entry, "configMapRef", "name")
        if config_map is not None:
            found = config_maps.value(namespace, config_map, name[len(prefix) :])
            if found is not None:
                return found
        elif dig(entry, "secretRef") is not None:
            return Opaque(f"env {name} (maybe from Secret {dig(entry, 'secretRef', 'name')})")
    return None


def _expand(value: str, pattern: re.Pattern[str], lookup: Any) -> Resolved:
    """`value` with every reference replaced: `UNKNOWN` if one is unknown, `Opaque` (with the unreadable
    reference described in place) if one cannot be read, else the expanded text."""
    parts, position, opaque = [], 0, False
    for match in pattern.finditer(value):
        resolved = lookup(next(g for g in match.groups() if g))
        if resolved is UNKNOWN:
            return UNKNOWN
        opaque = opaque or isinstance(resolved, Opaque)
        replacement = f"<{resolved}>" if isinstance(resolved, Opaque) else resolved
        parts += [value[position : match.start()], match.group(0) if replacement is None else str(replacement)]
        position = match.end()
    expanded = "".join(parts) + value[position:]
    return Opaque(expanded) if opaque else expanded


def command_line(container: dict[str, Any], namespace: Any, config_maps: ConfigMaps) -> list[Resolved]:
    """`command` + `args` as the process sees them; an unknown or unreadable part is one element of it."""

    def lookup(name: str) -> Resolved:
        return env_value(container, name, namespace, config_maps)

    words: list[Resolved] = []
    for field in ("command", "args"):
        listed = container.get(field)
        if listed is UNKNOWN:
            words.append(UNKNOWN)
        for word in as_list(listed):
            words.append(_expand(word, K8S_REFERENCE, lookup) if isinstance(word, str) else word)
    return _unshell(words, lookup)


def _unshell(words: list[Resolved], lookup: Any) -> list[Resolved]:
    """A shell invocation's script split into words, so flags inside `sh -c '...'` count."""
    for index, word in enumerate(words[:-1]):
        if not (isinstance(word, str) and word.rsplit("/", 1)[-1] in SHELLS):
            continue
        rest = words[index + 1 :]
        script_at = next(
            (i for i, w in enumerate(rest) if isinstance(w, str) and w.startswith("-") and "c" in w[1:]), None
        )
        if (
            script_at is None
            or script_at + 1 >= len(rest)
            or not isinstance(rest[script_at + 1], str)
            or isinstance(rest[script_at + 1], Opaque)
        ):
            continue
        script = rest[script_at + 1]
        try:
            split = shlex.split(script, comments=True)
        except ValueError:
            return words
        return words[: index + 1] + [_expand(w, SHELL_REFERENCE, lookup) for w in split]
    return words


def _option(word: Resolved) -> Resolved:
    """A long option as argparse-based engines read it: vLLM's FlexibleArgumentParser (which Dynamo's vLLM and
    SGLang entry points use) takes `--disaggregation_mode` as `--disaggregation-mode`."""
    if not isinstance(word, str) or not word.startswith("--"):
        return word
    name, equals, value = word.partition("=")
    return name.replace("_", "-") + equals + value


def flag_value(words: list[Resolved], flag: str) -> Resolved:
    """The value of `--flag value` or `--flag=value` (underscores in the option name read as dashes): None if
    absent, `UNKNOWN` if not known."""
    for index, raw in enumerate(words):
        word = _option(raw)
        if word == flag:
            return words[index + 1] if index + 1 < len(words) else None
        if isinstance(word, str) and word.startswith(flag + "="):
            value = word[len(flag) + 1 :]
            return Opaque(value) if isinstance(raw, Opaque) else value
    return UNKNOWN if any(w is UNKNOWN for w in words) else None


def has_flag(words: list[Resolved], flag: str) -> Optional[bool]:
    if any(_option(w) == flag or (isinstance(w, str) and str(_option(w)).startswith(flag + "=")) for w in words):
        return True
    return None if any(w is UNKNOWN for w in words) else False
