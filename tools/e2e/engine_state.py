"""Reading the engine's word: its state and its update plan, next to the render and the rollout model.

- `state_resources` / `render_resources`: the (type, name) pairs `pulumi stack export` and the offline
  render's resources.json list, for "the render and the engine agree on what the stack is";
- `engine_plan`: the engine's steps (`engine.Run`: a preview's planned ones, an `up`'s finished ones) collapsed
  to one operation per resource, with the order of a replacement's create and delete;
- `model_plan`: what `tools.rollout.replacements.predict_update` predicts for the same change, in the same shape;
- `missing_objects`: the Kubernetes objects a stack's state names that the cluster no longer has;
- `stack_objects`: what is left of a stack after destroy (namespaced, cluster-scoped, Secrets);
- `pending_creates`: what an interrupted update was still creating (the checkpoint's pending operations).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pulumi.automation import OpType, StepEventMetadata

from tools.e2e.kube import KINDS, Kube
from tools.rollout.replacements import DELETE_FIRST, REPLACE, predict_update

# The stack itself and what it only reads (its last deployment) are not resources the render lists.
ENGINE_ONLY = ("pulumi:pulumi:Stack", "pulumi:pulumi:StackReference")
REPLACE_STEPS = {"replace", "create-replacement", "delete-replaced", "discard-replaced"}


def urn_name(urn: str) -> str:
    return urn.split("::")[-1]


def _default_provider(type_: str, name: str) -> bool:
    return type_.startswith("pulumi:providers:") and name.startswith("default")


def state_resources(state: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    pairs = {(str(r["type"]), urn_name(str(r["urn"]))) for r in state}
    return {(t, n) for t, n in pairs if t not in ENGINE_ONLY and not _default_provider(t, n)}


def render_resources(records: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {(str(r["type"]), str(r["name"])) for r in records}


def engine_steps(steps: Iterable[StepEventMetadata]) -> dict[str, list[str]]:
    """name -> the engine's steps for it, in order (for messages)."""
    found: dict[str, list[str]] = {}
    for step in steps:
        found.setdefault(urn_name(step.urn), []).append(OpType(step.op).value)
    return found


def engine_plan(steps: Iterable[StepEventMetadata]) -> dict[str, str]:
    """name -> create | update | delete | replace (create-first) | replace (delete-first); unchanged left out.
    `steps`: a preview's planned steps or an `up`'s finished ones (`engine.Run`)."""
    plan = {}
    for name, ops in engine_steps(s for s in steps if s.type not in ENGINE_ONLY).items():
        seen = [op for op in ops if op not in ("same", "read", "refresh")]
        if REPLACE_STEPS & set(seen):
            replacement = ("delete-replaced", "create-replacement")
            ordered = all(op in seen for op in replacement) and seen.index(replacement[0]) < seen.index(replacement[1])
            plan[name] = f"replace ({'delete' if ordered else 'create'}-first)"
        elif seen:
            plan[name] = seen[0]
    return plan


def model_plan(before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    plan = {}
    for change in predict_update(before, after):
        if change.action == REPLACE and change.replacement is not None:
            first = "delete-first" if change.replacement.strategy == DELETE_FIRST else "create-first"
            plan[change.resource.name] = f"replace ({first})"
        else:
            plan[change.resource.name] = change.action
    return plan


def missing_objects(kube: Kube, state: Iterable[Mapping[str, Any]]) -> list[str]:
    """`kind/namespace/name` of each Kubernetes object in the state that is gone or being deleted."""
    missing = []
    for resource in state:
        outputs = resource.get("outputs") or {}
        kind, metadata = outputs.get("kind"), outputs.get("metadata") or {}
        if not resource.get("custom") or kind not in KINDS or not metadata.get("name"):
            continue
        live = kube.get(kind, metadata["name"], metadata.get("namespace"))
        if live is None or live["metadata"].get("deletionTimestamp"):
            missing.append(f"{kind}/{metadata.get('namespace', '')}/{metadata['name']}")
    return missing


# What the API server itself puts into every namespace (not the stack's).
SERVER_MADE = {("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")}


def stack_objects(kube: Kube, namespace: str, records: Iterable[Mapping[str, Any]]) -> list[str]:
    """What is left of a stack: its namespace, anything in it (Secrets included) but what the API server puts
    into every namespace, and every object the render names wherever it lives (cluster-scoped ones included).
    A list the API server refuses is an error, never an empty list."""
    left = []
    if kube.get("Namespace", namespace) is not None:
        left.append(f"Namespace//{namespace}")
    for kind, (_, _, namespaced) in KINDS.items():
        if namespaced:
            left += [
                f"{kind}/{namespace}/{i['metadata']['name']}"
                for i in kube.list(kind, namespace)
                if (kind, i["metadata"]["name"]) not in SERVER_MADE
            ]
    for record in records:
        inputs = record.get("inputs") or {}
        if not str(record.get("type", "")).startswith("kubernetes:") or inputs.get("kind") not in KINDS:
            continue
        metadata = inputs.get("metadata") or {}
        where = metadata.get("namespace") if KINDS[inputs["kind"]][2] else None
        name = f"{inputs['kind']}/{where or ''}/{metadata.get('name')}"
        if metadata.get("name") and name not in left and kube.get(inputs["kind"], metadata["name"], where) is not None:
            left.append(name)
    return left


def pending_creates(deployment: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """(urn, kind, namespace or "", name) of each Kubernetes object an interrupted update was still creating:
    the creates the engine keeps as pending until `pulumi refresh` imports or clears them."""
    found = []
    for operation in deployment.get("pending_operations") or []:
        resource = operation.get("resource") or {}
        inputs = resource.get("inputs") or {}
        metadata = inputs.get("metadata") or {}
        if operation.get("type") == "creating" and str(resource.get("type", "")).startswith("kubernetes:"):
            found.append(
                (
                    str(resource["urn"]),
                    str(inputs.get("kind", "")),
                    str(metadata.get("namespace", "")),
                    str(metadata.get("name", "")),
                )
            )
    return found
