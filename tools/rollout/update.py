"""What an update does: the render of the current config against the render of the changed one, as
`pulumi preview --diff` would classify it. A resource whose replace-forcing input changes is replaced (how, and
whether that collides or is refused: replacements.py); one whose other inputs change is updated in place; a
resource only in the new render is created, one only in the old render is deleted.

    changes = predict_update(before_records, after_records)
    [c for c in changes if c.replacement and not c.replacement.clean]   # what would fail
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools.rollout.graph import Resource, StackGraph, lookup
from tools.rollout.replacements import Replacement, predict, replace_fields
from tools.rollout.rules import Rules, load_rules

CREATE, DELETE, UPDATE, REPLACE = "create", "delete", "update", "replace"


@dataclass(frozen=True)
class Change:
    """One resource's fate in the update; `fields` are the inputs that differ (replace-forcing ones for a
    replacement, top-level inputs for an in-place update)."""

    resource: Resource
    action: str
    fields: tuple[str, ...] = ()
    replacement: Replacement | None = None


def _differs(old: Resource, new: Resource, field: str) -> bool:
    return bool(lookup(old.inputs, field) != lookup(new.inputs, field))


def predict_update(
    before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]], rules: Rules | None = None
) -> list[Change]:
    """Every resource that the update creates, deletes, replaces or updates (unchanged ones are left out)."""
    rules = rules or load_rules()
    old, new = StackGraph(before), StackGraph(after)
    changes = [Change(r, DELETE) for r in old if r.custom and new.get(r.key) is None]
    for resource in new:
        previous = old.get(resource.key)
        if not resource.custom or resource.is_provider:
            continue
        if previous is None:
            changes.append(Change(resource, CREATE))
            continue
        forcing = tuple(f for f in replace_fields(resource, rules) if _differs(previous, resource, f))
        if forcing:
            changes.append(Change(resource, REPLACE, forcing, predict(new, resource, rules, forcing[0])))
            continue
        changed = tuple(sorted(k for k in {*previous.inputs, *resource.inputs} if _differs(previous, resource, k)))
        if changed:
            changes.append(Change(resource, UPDATE, changed))
    return _unknown_until_replaced(new, changes, rules)


def _unknown_until_replaced(graph: StackGraph, changes: list[Change], rules: Rules) -> list[Change]:
    """The preview's view: a Kubernetes object built from a replaced resource's (then unknown) outputs is planned
    as a replacement too, in dependency order so it carries on down a chain."""
    if not rules.preview_replaces_dependents_of_replaced:
        return changes
    by_key = {c.resource.key: c for c in changes}
    for key in graph.topological_order():
        resource = graph.resources[key]
        current = by_key.get(key)
        if not resource.is_kubernetes_object or (current and current.action in (REPLACE, CREATE, DELETE)):
            continue
        fields = tuple(
            prop
            for prop, deps in sorted(resource.property_dependencies.items())
            if any(by_key.get(d) is not None and by_key[d].action == REPLACE for d in deps)
        )
        if fields:
            by_key[key] = Change(resource, REPLACE, fields, predict(graph, resource, rules, fields[0]))
    return [by_key.get(c.resource.key, c) for c in changes] + [
        c for k, c in by_key.items() if k not in {x.resource.key for x in changes}
    ]
