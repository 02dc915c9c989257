"""What a change to a replace-forcing field does to each resource: how it is replaced, whether the new one
collides with the old, whether `protect` refuses, and what else is replaced with it.

Kubernetes: the provider deletes a named object before creating its replacement (no collision, a gap).
Helm: replaced create-first; a chart with cluster-scoped objects named after the release collides when only
the namespace changes. pulumi-aws: create-first unless `deleteBeforeReplace` (or the type is delete-first);
with a name given explicitly the new resource has the old one's identity and its create fails.

An update (`predict_update`): the render of the current config against the render of the changed one, as
`pulumi preview --diff` would classify it. A resource whose replace-forcing input changes is replaced (as
above); one whose other inputs change is updated in place; a resource only in the new render is created, one
only in the old render is deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools.rollout.findings import REPLACE as REPLACE  # also the action of a replaced resource
from tools.rollout.findings import Finding
from tools.rollout.graph import HELM_RELEASE, Resource, StackGraph, lookup
from tools.rollout.rules import Rules, load_rules

CREATE_FIRST = "create-before-delete"
DELETE_FIRST = "delete-before-replace"
CREATE, DELETE, UPDATE = "create", "delete", "update"


@dataclass(frozen=True)
class Replacement:
    """The predicted replacement of one resource when `field` changes."""

    resource: Resource
    field: str
    strategy: str
    collides: bool
    collision: str  # why it collides ("" when it does not)
    blocked_by_protect: bool
    cascade: tuple[str, ...]  # names of dependents replaced with it

    @property
    def clean(self) -> bool:
        return not self.collides and not self.blocked_by_protect


def _top(field: str) -> str:
    return field.split(".")[0]


def replace_fields(resource: Resource, rules: Rules) -> tuple[str, ...]:
    """The provider's replace-forcing inputs plus the resource's own `replaceOnChanges`."""
    fields = () if resource.is_provider else rules.replace_fields_of(resource.type, resource.inputs)
    return fields + tuple(f for f in resource.replace_on_changes if f != "*" and f not in fields)


def data_role(resource: Resource, rules: Rules) -> str:
    if resource.is_kubernetes_object:
        return rules.kubernetes_data_roles.get(resource.kind, "")
    aws = rules.aws_types.get(resource.type)
    return aws.data_role if aws else ""


def fixed_identity(resource: Resource, rules: Rules) -> str:
    """The physical identity old and new share ("" when the provider generates one)."""
    if resource.is_kubernetes_object:
        return resource.object_name and f"metadata.name {resource.object_name!r}"
    aws = rules.aws_types.get(resource.type)
    if aws is None or not aws.unique_by:
        return ""
    if any(resource.inputs.get(f) for f in aws.generated_name_fields):
        return ""
    if aws.name_fields and not any(resource.inputs.get(f) for f in aws.name_fields):
        return ""
    shown = [f"{f} {lookup(resource.inputs, f)!r}" for f in aws.unique_by if lookup(resource.inputs, f) is not None]
    return ", ".join(shown) or ", ".join(aws.unique_by)


def _strategy(resource: Resource, rules: Rules) -> str:
    if resource.delete_before_replace:
        return DELETE_FIRST
    if resource.is_kubernetes_object and resource.object_name and rules.kubernetes_named_delete_first:
        return DELETE_FIRST
    aws = rules.aws_types.get(resource.type)
    return DELETE_FIRST if aws and aws.provider_delete_before_replace else CREATE_FIRST


def _collision(resource: Resource, rules: Rules, field: str, strategy: str) -> str:
    if strategy == DELETE_FIRST:
        return ""
    if resource.type == HELM_RELEASE:
        chart = str(resource.inputs.get("chart", ""))
        if field == "namespace" and any(e["chart"] in chart for e in rules.helm["cluster_scoped_charts"]):
            return (
                f"release {resource.object_name!r} keeps its name, and its cluster-scoped objects (named after the "
                f"release) already exist, owned by the old release"
            )
        return ""
    aws = rules.aws_types.get(resource.type)
    identity = fixed_identity(resource, rules)
    if aws is None or not identity:
        return ""
    if _top(field) in {_top(f) for f in aws.unique_by + aws.name_fields + aws.generated_name_fields}:
        return ""
    if aws.singleton:
        return f"the new one overwrites the old (one per {identity}), then deleting the old removes the setting"
    return f'the new one has the same {identity} as the old ("already exists")'


def _forces(dependent: Resource, rules: Rules, prop: str) -> bool:
    """Whether an input (recorded per top-level property) is replace-forcing for the dependent. Kubernetes
    inputs are recorded as whole `spec`/`metadata` objects, too coarse to tell: only exact fields count."""
    return any(
        field == prop or (not dependent.is_kubernetes_object and field.startswith(prop + "."))
        for field in replace_fields(dependent, rules)
    )


def cascade(graph: StackGraph, resource: Resource, rules: Rules) -> tuple[str, ...]:
    """Dependents whose replace-forcing inputs are built from this resource's outputs: replaced with it."""
    replaced: list[str] = []
    frontier, seen = [resource.key], {resource.key}
    while frontier:
        current = frontier.pop()
        for key in graph.dependents[current]:
            dependent = graph.resources[key]
            edges = dependent.property_dependencies.items()
            forced = any(current in deps and _forces(dependent, rules, prop) for prop, deps in edges)
            if key not in seen and forced:
                seen.add(key)
                replaced.append(dependent.name)
                frontier.append(key)
    return tuple(replaced)


def predict(graph: StackGraph, resource: Resource, rules: Rules, field: str) -> Replacement:
    """What `pulumi up` does to `resource` when `field` (a replace-forcing input) changes."""
    strategy = _strategy(resource, rules)
    why = _collision(resource, rules, field, strategy)
    return Replacement(resource, field, strategy, bool(why), why, resource.protect, cascade(graph, resource, rules))


def replacement_findings(graph: StackGraph, rules: Rules) -> list[Finding]:
    findings = []
    for resource in graph:
        if not resource.custom or resource.is_provider:
            continue
        fields = replace_fields(resource, rules)
        colliding = [f for f in fields if predict(graph, resource, rules, f).collides]
        if colliding:
            why = predict(graph, resource, rules, colliding[0]).collision
            shown = ", ".join(colliding[:4]) + (f" (or {len(colliding) - 4} more)" if len(colliding) > 4 else "")
            named = resource.type != HELM_RELEASE and bool(rules.aws_types[resource.type].name_fields)
            remedy = (
                "let the provider generate the name (or a name prefix), or set deleteBeforeReplace"
                if named
                else "set deleteBeforeReplace"
            )
            why = f"{resource.type}: a change to {shown} replaces it {CREATE_FIRST} and {why}; {remedy}"
            findings.append(Finding(REPLACE, resource.name, why, True))
        forcing = [f for f in fields if not f.startswith("metadata.")]
        if resource.protect and forcing and not data_role(resource, rules):
            why = (
                f"{resource.type} is protected but holds no data: a change to {', '.join(forcing)} needs a replacement "
                f"that protect refuses; protect what holds data, not what describes it"
            )
            findings.append(Finding(REPLACE, resource.name, why, True))
    return sorted(findings)


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
