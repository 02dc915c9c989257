"""Which changes replace a resource instead of updating it, from `catalog/replacement_rules.yaml`.

The rules compare the values at each replace-forcing input path of the old and new inputs, so a change
anywhere below `spec.template` of a Job replaces it, while a PVC size change does not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

RULES_FILE = Path(__file__).resolve().parents[2] / "catalog" / "replacement_rules.yaml"


@dataclass(frozen=True)
class ReplacementRule:
    types: tuple[str, ...]
    replace_on: tuple[str, ...]
    source: str
    excepted: tuple[str, ...] = ()
    unless_provider_sets: str | None = None

    def applies_to(self, type_token: str) -> bool:
        return any(fnmatchcase(type_token, pattern) for pattern in self.types)


@dataclass(frozen=True)
class ReplacementRules:
    rules: tuple[ReplacementRule, ...]
    fixed_names: dict[str, str]
    provider_change_note: str
    urn_change_note: str

    def replacing_fields(
        self, type_token: str, before: dict[str, Any], after: dict[str, Any], provider_inputs: dict[str, Any]
    ) -> list[tuple[str, str]]:
        """(input path, rule source) for every replace-forcing input that differs."""
        found: list[tuple[str, str]] = []
        for rule in self.rules:
            if not rule.applies_to(type_token) or _mutable_here(rule, after, provider_inputs):
                continue
            for path in rule.replace_on:
                if path == "*":
                    found += [(key, rule.source) for key in _changed_keys(before, after, rule.excepted)]
                elif _canonical(_select(before, path)) != _canonical(_select(after, path)):
                    found.append((path, rule.source))
        return sorted(set(found))

    def fixed_name(self, type_token: str, inputs: dict[str, Any]) -> tuple[str, Any] | None:
        """The input that fixes this resource's physical name, and its value, when it is set."""
        key = self.fixed_names.get(type_token)
        if key is None or inputs.get(key) in (None, ""):
            return None
        return key, inputs[key]


def _mutable_here(rule: ReplacementRule, inputs: dict[str, Any], provider_inputs: dict[str, Any]) -> bool:
    if rule.unless_provider_sets is None:
        return False
    enabled = str(provider_inputs.get(rule.unless_provider_sets, "false")).lower() == "true"
    return enabled and inputs.get("immutable") is not True


def _select(value: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _changed_keys(before: dict[str, Any], after: dict[str, Any], excepted: tuple[str, ...]) -> list[str]:
    keys = (set(before) | set(after)) - set(excepted)
    return sorted(k for k in keys if _canonical(before.get(k)) != _canonical(after.get(k)))


def load_rules(path: Path = RULES_FILE) -> ReplacementRules:
    data = yaml.safe_load(path.read_text())
    rules = tuple(
        ReplacementRule(
            types=tuple(entry["types"]),
            replace_on=tuple(entry["replaceOn"]),
            source=entry["source"],
            excepted=tuple(entry.get("except", ())),
            unless_provider_sets=entry.get("unlessProviderSets"),
        )
        for entry in data["rules"]
    )
    engine = data["engine"]
    return ReplacementRules(
        rules=rules,
        fixed_names=dict(data.get("fixedNames") or {}),
        provider_change_note=f"{engine['providerChange']['note']} ({engine['providerChange']['source']})",
        urn_change_note=f"{engine['urnChange']['note']} ({engine['urnChange']['source']})",
    )
