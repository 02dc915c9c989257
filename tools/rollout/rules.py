"""The engine's and providers' rules (`provider_rules.yaml`, the one table of replace-forcing inputs the PR diff
and the rollout model both read) and the durations table (`catalog/durations.yaml`), typed.

Loaded once; everything else interprets these, so a new kind, type or number is a data change.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import AliasPath, BaseModel, ConfigDict, Field

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.durations import Durations, Kind, load_durations
from serving_stack.facts.strict_files import load_yaml_documents
from tools.rollout.graph import lookup

if TYPE_CHECKING:
    from tools.rollout.durations import Node

RULES_DIR = Path(__file__).resolve().parent
PROVIDER_RULES_FILE = RULES_DIR / "provider_rules.yaml"
ENGINE_CONFIRMED_FILE = RULES_DIR / "engine_confirmed.yaml"


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class KindAwait(_Entry):
    """How the Kubernetes provider waits for one kind after create/update."""

    ready_when: str
    timeout_seconds: float = 0.0
    timeout_fixed: bool = False
    immediate: bool = False
    source: str


class ReplacementRule(_Entry):
    """Inputs whose change replaces a resource of the types it names (`replacements` in the rules file)."""

    types: tuple[str, ...]
    replace_on: tuple[str, ...] = Field(alias="replaceOn")
    source: str
    not_types: tuple[str, ...] = Field((), alias="notTypes")
    excepted: tuple[str, ...] = Field((), alias="except")
    unless_provider_sets: str | None = Field(None, alias="unlessProviderSets")

    def applies_to(self, type_token: str) -> bool:
        matches = any(fnmatchcase(type_token, pattern) for pattern in self.types)
        return matches and type_token not in self.not_types

    def mutable_here(self, inputs: Mapping[str, Any], provider_inputs: Mapping[str, Any]) -> bool:
        if self.unless_provider_sets is None:
            return False
        enabled = str(provider_inputs.get(self.unless_provider_sets, "false")).lower() == "true"
        return enabled and inputs.get("immutable") is not True


class AwsType(_Entry):
    """Replacement facts of one pulumi-aws type."""

    name_fields: tuple[str, ...] = ()
    generated_name_fields: tuple[str, ...] = ()
    unique_by: tuple[str, ...] = ()
    provider_delete_before_replace: bool = False
    singleton: bool = False
    data_role: str = ""
    replace_note: str = ""
    source: str


@dataclass(frozen=True)
class Span:
    """A duration in minutes, typical and worst case, with what it rests on and the kind of its typical value."""

    typical: float
    max: float
    basis: str
    worst_basis: str = "estimate"
    kind: Kind = "measured"
    node: Node | None = field(default=None, compare=False)  # the steps it is made of, where it has several

    @property
    def estimated(self) -> bool:
        return self.kind == "estimate"


def _at(*path: str) -> Any:
    return Field(validation_alias=AliasPath(*path))


class Rules(BaseModel):
    """`provider_rules.yaml` under the names the model reads, and the durations table."""

    model_config = ConfigDict(frozen=True)

    sources: dict[str, str]
    kinds: dict[str, KindAwait] = _at("kubernetes", "kinds")
    default_timeout_seconds: float = _at("kubernetes", "default_timeout_seconds")
    custom_resource_ready_when: str = _at("kubernetes", "custom_resource", "ready_when")
    annotations: dict[str, str] = _at("kubernetes", "annotations")
    pod_spec_paths: dict[str, tuple[str, ...]] = _at("kubernetes", "pod_spec_paths")
    kubernetes_named_delete_first: bool = _at("kubernetes", "named_objects_delete_before_replace", "value")
    preview_replaces_dependents_of_replaced: bool = _at(
        "kubernetes", "preview_replaces_dependents_of_replaced", "value"
    )
    restart_needed_on_replace: frozenset[str] = _at("kubernetes", "restart_needed_on_replace")
    restart_annotation_markers: tuple[str, ...] = _at("kubernetes", "restart_annotations", "match")
    long_running_kinds: frozenset[str] = _at("kubernetes", "long_running_kinds")
    kubernetes_data_roles: dict[str, str] = _at("kubernetes", "data_roles")
    helm: dict[str, Any] = _at("kubernetes", "helm_release")
    extended_resources: dict[str, dict[str, str]] = _at("kubernetes", "extended_resources")
    operators: dict[str, dict[str, str]] = _at("kubernetes", "operators")
    provisioners: dict[str, dict[str, str]] = _at("kubernetes", "provisioners")
    aws_types: dict[str, AwsType] = _at("aws", "types")
    replacements: tuple[ReplacementRule, ...]
    provider_change: dict[str, str] = _at("engine", "providerChange")
    urn_change: dict[str, str] = _at("engine", "urnChange")
    aws_deletion: dict[str, dict[str, Any]] = _at("aws", "deletion")
    aws_durations: dict[str, str] = _at("aws", "durations")  # type token -> the durations table step its create takes
    gpu_ami_types: frozenset[str] = _at("aws", "gpu_ami_types", "values")
    durations: Durations = Field(repr=False)

    @property
    def provider_change_note(self) -> str:
        return f"{self.provider_change['note']} ({self.provider_change['source']})"

    @property
    def urn_change_note(self) -> str:
        return f"{self.urn_change['note']} ({self.urn_change['source']})"

    def source(self, key: str) -> str:
        """What a source key names (file and the lines it rests on)."""
        return self.sources.get(key, key)

    def span(self, step_id: str) -> Span:
        """The durations table's step `step_id`; tables show its source up to the first ';'."""
        step = self.durations.steps[step_id]
        return Span(step.seconds / 60, step.worst / 60, step.source.split(";")[0], kind=step.kind)

    def replace_fields_of(self, type_token: str, inputs: Mapping[str, Any] | None = None) -> tuple[str, ...]:
        """The replace-forcing inputs of a type, in table order; `*` stands for each of `inputs` but the excepted."""
        fields: dict[str, None] = {}
        for rule in (r for r in self.replacements if r.applies_to(type_token)):
            for path in rule.replace_on:
                every = path == "*" and inputs is not None
                fields.update(dict.fromkeys(sorted(set(inputs or ()) - set(rule.excepted)) if every else [path]))
        return tuple(fields)

    def replacing_fields(
        self, type_token: str, before: Mapping[str, Any], after: Mapping[str, Any], provider_inputs: Mapping[str, Any]
    ) -> list[tuple[str, str]]:
        """(input path, rule source) for every replace-forcing input that differs."""
        found: set[tuple[str, str]] = set()
        for rule in self.replacements:
            if not rule.applies_to(type_token) or rule.mutable_here(after, provider_inputs):
                continue
            for path in rule.replace_on:
                keys = sorted((set(before) | set(after)) - set(rule.excepted)) if path == "*" else [path]
                found |= {(k, self.source(rule.source)) for k in keys if _canonical(before, k) != _canonical(after, k)}
        return sorted(found)

    def fixed_name(self, type_token: str, inputs: Mapping[str, Any]) -> tuple[str, Any] | None:
        """The input that fixes this resource's physical name, and its value, when it is set."""
        aws = self.aws_types.get(type_token)
        named = [key for key in (aws.name_fields if aws else ()) if inputs.get(key) not in (None, "")]
        return (named[0], inputs[named[0]]) if named else None


def _canonical(inputs: Mapping[str, Any], path: str) -> str:
    return json.dumps(lookup(inputs, path), sort_keys=True)


def _read_mapping(path: Path) -> dict[str, Any]:
    """One YAML mapping, read as strictly as the catalog (`serving_stack.facts.strict_files`)."""
    name = f"{path.parent.name}/{path.name}"
    documents = load_yaml_documents(path, name)
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise ConfigError(name, "must hold one YAML mapping")
    return documents[0]


@functools.cache
def load_engine_confirmed(path: Path = ENGINE_CONFIRMED_FILE) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The engine versions `make e2e` runs and the rules its scenarios confirm (rule, scenario)."""
    data = _read_mapping(path)
    engine, confirmed = data.get("engine"), data.get("confirmed")
    if not isinstance(engine, dict) or not isinstance(confirmed, list):
        raise ConfigError(f"{path.parent.name}/{path.name}", "needs an `engine` mapping and a `confirmed` list")
    return {str(k): str(v) for k, v in engine.items()}, [
        {"rule": str(c["rule"]), "scenario": str(c["scenario"])} for c in confirmed
    ]


def load_rules(provider_rules: Path = PROVIDER_RULES_FILE, durations: Durations | None = None) -> Rules:
    """The provider rules and the durations table (default: the catalog's); a file missing a key or holding a
    wrong type, or a rule naming a step the table lacks, is one `ConfigError` naming the file."""
    data = _read_mapping(provider_rules)
    name = f"{provider_rules.parent.name}/{provider_rules.name}"
    missing = [key for key in ("sources", "kubernetes", "aws") if not isinstance(data.get(key), dict)]
    if missing:
        raise ConfigError(name, f"needs the mapping(s) {', '.join(missing)}")
    table = durations if durations is not None else load_durations()
    try:
        rules = Rules.model_validate({**data, "durations": table})
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ConfigError(name, f"malformed: {bounded(repr(error), quote=False)}") from None
    named = {*rules.aws_durations.values(), *(p["duration"] for p in rules.provisioners.values())}
    unknown = sorted(named - set(table.steps))
    if unknown:
        raise ConfigError(name, f"names step(s) catalog/durations.yaml lacks: {', '.join(unknown)}")
    return rules
