"""Records of real renders (the committed stacks run under mocks) for the rollout model's tests, and small
mutations that repair or plant one defect at a time, so each test holds before and after the program fixes."""
from __future__ import annotations

import copy
import functools
from typing import Any

import yaml
from stack_helpers import PROJECT, all_targets_config, rendered_stack, run_config

from tools.mock_runtime import PROJECT_DIR
from tools.rollout import RolloutReport, analyse
from tools.rollout.graph import StackGraph
from tools.rollout.rules import load_rules

Record = dict[str, Any]
RULES = load_rules()
ANNOTATIONS = RULES.annotations


@functools.cache
def _stack(stack: str) -> tuple[Record, ...]:
    if stack == "all-targets":
        return tuple(r.to_json() for r in run_config(all_targets_config()).resources)
    return tuple(r.to_json() for r in rendered_stack(stack).resources)


def records(stack: str) -> list[Record]:
    """A fresh, mutable copy of a stack's resources.json records ("dev", "prod" or "all-targets")."""
    return copy.deepcopy(list(_stack(stack)))


def committed_config(stack: str) -> dict[str, Any]:
    """The project keys of `Pulumi.<stack>.yaml`, unprefixed, to vary one setting with `run_config`."""
    values = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {k.split(":", 1)[1]: v for k, v in values.items() if k.startswith(f"{PROJECT}:") and k != f"{PROJECT}:hfToken"}


def named(records_: list[Record], name: str) -> Record:
    (match,) = [r for r in records_ if r["name"] == name]
    return match


def key(record: Record) -> str:
    return f"{record['type']}::{record['name']}"


def of_kind(records_: list[Record], kind: str) -> list[Record]:
    return [r for r in records_ if r["custom"] and r["inputs"].get("kind") == kind]


def of_type(records_: list[Record], type_token: str) -> list[Record]:
    return [r for r in records_ if r["type"] == type_token]


def annotate(record: Record, **annotations: str) -> None:
    """Set `pulumi.com/...` annotations by their provider_rules.yaml names (skip_await=..., wait_for=...)."""
    metadata = record["inputs"].setdefault("metadata", {})
    metadata.setdefault("annotations", {}).update({ANNOTATIONS[k]: v for k, v in annotations.items()})


def add_dependency(record: Record, on: Record) -> None:
    record["dependsOn"] = sorted(set(record["dependsOn"]) | {key(on)})


def remove_dependency(records_: list[Record], record: Record, on: Record) -> None:
    """Drop every edge by which `record` (or its parent component) waits for `on`."""
    for holder in (record, *(r for r in records_ if key(r) == record["parent"])):
        holder["dependsOn"] = [d for d in holder["dependsOn"] if d != key(on)]
        for prop, deps in holder.get("propertyDependencies", {}).items():
            holder["propertyDependencies"][prop] = [d for d in deps if d != key(on)]


def secret_record(name: str, namespace_record: Record, provider: str) -> Record:
    """A stack-created Secret as the render records one (the fix's pull Secret, say)."""
    namespace = namespace_record["inputs"]["metadata"]["name"]
    return {
        "type": "kubernetes:core/v1:Secret", "name": f"test-{name}", "parent": namespace_record["parent"], "custom": True,
        "provider": provider, "dependsOn": [key(namespace_record)],
        "propertyDependencies": {"metadata": [key(namespace_record)]}, "protect": False, "retainOnDelete": False,
        "deleteBeforeReplace": False, "deletedWith": "", "customTimeouts": {}, "ignoreChanges": [],
        "replaceOnChanges": [], "aliases": [],
        "inputs": {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                   "metadata": {"name": name, "namespace": namespace}, "data": {".dockerconfigjson": "[secret]"}},
    }


def report(records_: list[Record]) -> RolloutReport:
    return analyse(records_)


def findings_about(records_: list[Record], resource: str, category: str = "", blocking: bool | None = None) -> list[str]:
    """Finding lines naming `resource` (optionally of one category / blocking state)."""
    return [
        f.line() for f in analyse(records_).findings
        if f.resource == resource and (not category or f.category == category) and (blocking is None or f.blocking == blocking)
    ]


def graph(records_: list[Record]) -> StackGraph:
    return StackGraph(records_)
