"""Check and resolve a pack config (the CLI's `--policy-pack-config` JSON) as the engine does.

`validate_pack_config` refuses what the engine would refuse (or misread), naming the key in a
`PackConfigError`; `resolve_config` gives each policy its enforcement level and config properties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from pulumi_policy import EnforcementLevel, Policy

from .pack import POLICIES

_LEVELS = {level.value: level for level in EnforcementLevel}
MAX_PROBLEM = 200  # characters of a pack-config problem (a value it quotes included)


class PackConfigError(ValueError):
    """A pack config the engine would refuse (or misread): `key` is where (`image-pinning.allowedRegistries`),
    `problem` what is wrong; the message is `<key>: <problem>`."""

    def __init__(self, key: str, problem: str) -> None:
        problem = " ".join(problem.split())
        problem = problem if len(problem) <= MAX_PROBLEM else problem[: MAX_PROBLEM - 3] + "..."
        self.key, self.problem = key, problem
        super().__init__(f"{key}: {problem}" if key else problem)


def _json_path(path: Sequence[Any]) -> str:
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)


def validate_pack_config(pack_config: Any, policies: Sequence[Policy] = POLICIES) -> None:
    """Check a whole pack config (the `--policy-pack-config` JSON) before anything runs: an object of policy
    names (and `all`), each entry an enforcement level or an object of `enforcementLevel` and the properties of
    the policy's config schema, every property valid against its JSON schema. Raises `PackConfigError` naming
    the first wrong key."""
    from jsonschema import Draft7Validator  # the offline runner's dependency; the engine validates itself

    if pack_config is None:
        return
    if not isinstance(pack_config, Mapping):
        raise PackConfigError("", f"pack config is {type(pack_config).__name__}, not an object of policy names")
    known = {p.name: p for p in policies}
    unknown = sorted(set(pack_config) - set(known) - {"all"})
    if unknown:
        raise PackConfigError("", f"pack config names unknown policies {unknown}; known: {', '.join(known)}")
    for name, entry in pack_config.items():
        if entry is None:
            continue
        if isinstance(entry, str):
            entry = {"enforcementLevel": entry}
        if not isinstance(entry, Mapping):
            raise PackConfigError(
                name, f"{entry!r} is neither an enforcement level ({', '.join(_LEVELS)}) nor an object"
            )
        level = entry.get("enforcementLevel")
        if level is not None and level not in _LEVELS:
            raise PackConfigError(f"{name}.enforcementLevel", f"{level!r} is not one of {', '.join(_LEVELS)}")
        policy = known.get(name)
        schema = policy.config_schema.properties if policy is not None and policy.config_schema else {}
        properties = {k: v for k, v in entry.items() if k != "enforcementLevel"}
        extra = sorted(set(properties) - set(schema))
        if extra:
            raise PackConfigError(name, f"unknown config properties {extra}; allowed: {', '.join(schema) or 'none'}")
        for key, value in properties.items():
            errors = sorted(Draft7Validator(schema[key]).iter_errors(value), key=lambda e: list(e.absolute_path))
            if errors:
                error = errors[0]
                raise PackConfigError(f"{name}.{key}{_json_path(list(error.absolute_path))}", error.message)


def resolve_config(
    policies: Sequence[Policy], pack_config: Optional[Mapping[str, Any]]
) -> dict[str, tuple[EnforcementLevel, dict[str, Any]]]:
    """Policy name -> (enforcement level, config properties), as the CLI resolves a pack config: the
    policy's own entry beats `all`, which beats the level the policy declares."""
    validate_pack_config(pack_config, policies)
    pack_config = dict(pack_config or {})
    known = {p.name: p for p in policies}

    def split(entry: Any) -> tuple[Optional[EnforcementLevel], dict[str, Any]]:
        if entry is None:
            return None, {}
        if isinstance(entry, str):
            entry = {"enforcementLevel": entry}
        entry = dict(entry)
        level = entry.pop("enforcementLevel", None)
        return (_LEVELS[level] if level else None), entry

    default_level, _ = split(pack_config.get("all"))
    resolved = {}
    for name, policy in known.items():
        level, properties = split(pack_config.get(name))
        schema = policy.config_schema.properties if policy.config_schema else {}
        defaults = {key: prop["default"] for key, prop in schema.items() if "default" in prop}
        resolved[name] = (
            level or default_level or policy.enforcement_level or EnforcementLevel.ADVISORY,
            {**defaults, **properties},
        )
    return resolved
