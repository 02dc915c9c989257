"""The engine's and providers' rules (`provider_rules.yaml`) and the durations table (`catalog/durations.yaml`,
`serving_stack.facts.durations`), typed.

Loaded once; everything else in the package interprets these, so a new kind, type or number is a data change.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.durations import Durations, Kind, Step, load_durations
from serving_stack.facts.strict_files import load_yaml_documents
from tools.rollout.parts import Node

RULES_DIR = Path(__file__).resolve().parent
PROVIDER_RULES_FILE = RULES_DIR / "provider_rules.yaml"
ENGINE_CONFIRMED_FILE = RULES_DIR / "engine_confirmed.yaml"


@dataclass(frozen=True)
class KindAwait:
    """How the Kubernetes provider waits for one kind after create/update."""

    kind: str
    ready_when: str
    timeout_seconds: float
    timeout_fixed: bool
    immediate: bool
    source: str


@dataclass(frozen=True)
class AwsType:
    """Replacement facts of one pulumi-aws type."""

    type: str
    name_fields: tuple[str, ...]
    generated_name_fields: tuple[str, ...]
    unique_by: tuple[str, ...]
    replace_fields: tuple[str, ...]
    provider_delete_before_replace: bool
    singleton: bool
    data_role: str
    replace_note: str
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

    @classmethod
    def of(cls, step: Step) -> Span:
        """A row of the durations table; tables show its source up to the first ';'."""
        return cls(step.seconds / 60, step.worst / 60, step.source.split(";")[0], kind=step.kind)


@dataclass(frozen=True)
class Rules:
    sources: dict[str, str]
    kinds: dict[str, KindAwait]
    default_timeout_seconds: float
    custom_resource_ready_when: str
    annotations: dict[str, str]
    pod_spec_paths: dict[str, tuple[str, ...]]
    cluster_scoped_kinds: frozenset[str]
    kubernetes_replace_fields: dict[str, tuple[str, ...]]
    kubernetes_named_delete_first: bool
    preview_replaces_dependents_of_replaced: bool
    restart_needed_on_replace: frozenset[str]
    restart_annotation_markers: tuple[str, ...]
    long_running_kinds: frozenset[str]
    kubernetes_data_roles: dict[str, str]
    helm: dict[str, Any]
    extended_resources: dict[str, dict[str, str]]
    operators: dict[str, dict[str, str]]
    provisioners: dict[str, dict[str, str]]
    aws_types: dict[str, AwsType]
    aws_deletion: dict[str, dict[str, Any]]
    aws_durations: dict[str, str]  # type token -> the durations table step its create takes
    gpu_ami_types: frozenset[str]
    durations: Durations = field(repr=False)

    def source(self, key: str) -> str:
        """What a source key names (file and the lines it rests on)."""
        return self.sources.get(key, key)

    def helm_cluster_scoped(self, chart: str) -> bool:
        return any(entry["chart"] in chart for entry in self.helm["cluster_scoped_charts"])

    def span(self, step_id: str) -> Span:
        """The durations table's step `step_id`."""
        return Span.of(self.durations.steps[step_id])


def _kind(kind: str, entry: dict[str, Any]) -> KindAwait:
    return KindAwait(
        kind=kind,
        ready_when=entry["ready_when"],
        timeout_seconds=float(entry.get("timeout_seconds", 0)),
        timeout_fixed=bool(entry.get("timeout_fixed", False)),
        immediate=bool(entry.get("immediate", False)),
        source=entry["source"],
    )


def _aws(type_token: str, entry: dict[str, Any]) -> AwsType:
    return AwsType(
        type=type_token,
        name_fields=tuple(entry.get("name_fields", ())),
        generated_name_fields=tuple(entry.get("generated_name_fields", ())),
        unique_by=tuple(entry.get("unique_by", ())),
        replace_fields=tuple(entry["replace_fields"]),
        provider_delete_before_replace=bool(entry.get("provider_delete_before_replace", False)),
        singleton=bool(entry.get("singleton", False)),
        data_role=entry.get("data_role", ""),
        replace_note=entry.get("replace_note", ""),
        source=entry["source"],
    )


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
        rules = _rules(data, table)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ConfigError(name, f"malformed: {bounded(repr(error), quote=False)}") from None
    named = {*rules.aws_durations.values(), *(p["duration"] for p in rules.provisioners.values())}
    unknown = sorted(named - set(table.steps))
    if unknown:
        raise ConfigError(name, f"names step(s) catalog/durations.yaml lacks: {', '.join(unknown)}")
    return rules


def _rules(data: dict[str, Any], durations: Durations) -> Rules:
    kubernetes, aws = data["kubernetes"], data["aws"]
    return Rules(
        sources=data["sources"],
        kinds={kind: _kind(kind, entry) for kind, entry in kubernetes["kinds"].items()},
        default_timeout_seconds=float(kubernetes["default_timeout_seconds"]),
        custom_resource_ready_when=kubernetes["custom_resource"]["ready_when"],
        annotations=kubernetes["annotations"],
        pod_spec_paths={kind: tuple(paths) for kind, paths in kubernetes["pod_spec_paths"].items()},
        cluster_scoped_kinds=frozenset(kubernetes["cluster_scoped_kinds"]),
        kubernetes_replace_fields={kind: tuple(fields) for kind, fields in kubernetes["replace_fields"].items()},
        kubernetes_named_delete_first=bool(kubernetes["named_objects_delete_before_replace"]["value"]),
        preview_replaces_dependents_of_replaced=bool(kubernetes["preview_replaces_dependents_of_replaced"]["value"]),
        restart_needed_on_replace=frozenset(kubernetes["restart_needed_on_replace"]),
        restart_annotation_markers=tuple(kubernetes["restart_annotations"]["match"]),
        long_running_kinds=frozenset(kubernetes["long_running_kinds"]),
        kubernetes_data_roles=kubernetes["data_roles"],
        helm=kubernetes["helm_release"],
        extended_resources=kubernetes["extended_resources"],
        operators=kubernetes["operators"],
        provisioners=kubernetes["provisioners"],
        aws_types={token: _aws(token, entry) for token, entry in aws["types"].items()},
        aws_deletion=aws["deletion"],
        aws_durations={str(token): str(step) for token, step in aws["durations"].items()},
        gpu_ami_types=frozenset(aws["gpu_ami_types"]["values"]),
        durations=durations,
    )
