"""Two renders of one stack -> what `pulumi up` would do to each resource, and its consequences: the cost
(`costs.py`), the GPU pools replaced node by node and the targets they interrupt (`pool_rolls.py`), the new
or changed targets that fail the stack's demand (`demand.py`), and the policy change.

Resources match by URN (type chain + name), as the engine matches state. A resource is replaced when a
replace-forcing input changes (tools/rollout/provider_rules.yaml `replacements`), its provider reference
changes, its provider is replaced, or its URN moves (same type and name under a new parent type).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Optional

from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.serving import deployed_dynamo_targets, swap_refusal
from tools.pr_diff.changes import MISSING, SECRET, FieldChange
from tools.pr_diff.costs import CostChange, diff_costs
from tools.pr_diff.demand import DemandCriteria, DemandMiss, demand_misses, stack_criteria
from tools.pr_diff.iam import policy_summary
from tools.pr_diff.pool_rolls import PoolRoll, pool_rolls
from tools.pr_diff.records import Render, Violation
from tools.pr_diff.values import ALWAYS_HIDDEN_KEYS, diff_values
from tools.rollout.graph import PROVIDER_PREFIX, Resource
from tools.rollout.rules import Rules

KINDS = ("replace", "remove", "add", "change")
OPTIONS = ("parent", "provider", "dependsOn", "protect", "retainOnDelete")
# Kubernetes Secrets: the payload is never shown, even when a value is not marked secret.
SECRET_PAYLOAD_KEYS = frozenset({"data", "stringData"})


@dataclass(frozen=True)
class ResourceChange:
    kind: str
    type: str
    name: str
    fields: tuple[FieldChange, ...] = ()
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # for the reviewer's attention
    summary: str = ""
    notes: tuple[str, ...] = ()  # how the change happens
    grants_access: bool = False  # an added IAM policy with an Allow statement


@dataclass(frozen=True)
class StackDiff:
    stack: str
    resources: tuple[ResourceChange, ...]
    cost: CostChange
    base_violations: tuple[Violation, ...]
    head_violations: tuple[Violation, ...]
    outputs: tuple[FieldChange, ...] = field(default=())
    # What the engine refuses or cannot finish in one `up` (a target swap on the same GPUs).
    engine_notes: tuple[str, ...] = field(default=())
    pool_rolls: tuple[PoolRoll, ...] = field(default=())
    criteria: Optional[DemandCriteria] = None
    demand_misses: tuple[DemandMiss, ...] = field(default=())
    # The head render's warnings: what deploys as before but needs a decision (a retired target).
    warnings: tuple[str, ...] = field(default=())

    def of_kind(self, kind: str) -> list[ResourceChange]:
        return [r for r in self.resources if r.kind == kind]

    @property
    def new_violations(self) -> list[Violation]:
        return [v for v in self.head_violations if v not in self.base_violations]

    @property
    def resolved_violations(self) -> list[Violation]:
        return [v for v in self.base_violations if v not in self.head_violations]

    @property
    def head_mandatory(self) -> list[Violation]:
        return [v for v in self.head_violations if v.mandatory]


def _field_changes(old: Resource, new: Resource) -> list[FieldChange]:
    hidden = SECRET_PAYLOAD_KEYS if new.type == "kubernetes:core/v1:Secret" else frozenset()
    changes = diff_values(old.inputs, new.inputs, hidden_keys=hidden)
    for option in OPTIONS:
        before, after = old.record.get(option, MISSING), new.record.get(option, MISSING)
        changes += diff_values(before, after, f"({option})")
    return changes


def _warnings(kind: str, old: Resource | None, new: Resource | None, rules: Rules) -> list[str]:
    warnings = []
    if old is not None and kind in ("replace", "remove") and old.protect:
        warnings.append(f"protected: `pulumi up` refuses to {kind} it until `protect` is lifted")
    if old is not None and kind == "remove" and old.retain_on_delete:
        warnings.append(
            "retainOnDelete: Pulumi forgets it and the object stays (deleting its namespace still deletes it)"
        )
    if old is not None and new is not None and kind == "replace":
        fixed = rules.fixed_name(new.type, new.inputs)
        if fixed is not None:
            warnings.append(
                f"fixed name `{fixed[0]}: {fixed[1]}`: a create-before-delete replacement collides with "
                "itself unless the resource sets `delete_before_replace`"
            )
    return warnings


def _dependents_note(head: Render, resource: Resource) -> str:
    """Resources that take a replaced resource's outputs: they update (or are replaced) once its new IDs
    exist, which an offline render cannot show."""
    names = sorted(r.name for r in head.resources.values() if resource.key in r.depends_on)
    if not names:
        return ""
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return f"takes new IDs into: {shown}"


def summarize(resource: Resource) -> str:
    """One line on what an added or removed resource is, for the types reviewers ask about."""
    inputs = resource.inputs
    if resource.type.endswith(":DynamoGraphDeployment"):
        components = (inputs.get("spec") or {}).get("components") or []
        return ", ".join(f"{c.get('name')} x{c.get('replicas', 1)}" for c in components)
    if resource.type == "aws:eks/nodeGroup:NodeGroup":
        scaling = inputs.get("scalingConfig") or {}
        return (
            f"{', '.join(inputs.get('instanceTypes') or [])}, nodes {scaling.get('minSize')}.."
            f"{scaling.get('maxSize')} (desired {scaling.get('desiredSize')})"
        )
    if isinstance(inputs.get("policy"), str):
        return policy_summary(inputs["policy"])
    return ""


def _compare_common(base: Render, head: Render, urn: str, rules: Rules) -> ResourceChange | None:
    old, new = base.resources[urn], head.resources[urn]
    fields = _field_changes(old, new)
    if not fields:
        return None
    provider = head.by_key(new.provider)
    replacing = rules.replacing_fields(new.type, old.inputs, new.inputs, provider.inputs if provider else {})
    reasons = [f"`{path}` forces a new resource ({source})" for path, source in replacing]
    if old.provider != new.provider:
        reasons.append(f"provider changed: {rules.provider_change_note}")
    if not reasons:
        return _change("change", old, new, fields, (), rules)
    return _change("replace", old, new, fields, reasons, rules, _dependents_note(head, new))


def _change(
    kind: str,
    old: Resource,
    new: Resource,
    fields: Iterable[FieldChange],
    reasons: Iterable[str],
    rules: Rules,
    summary: str = "",
) -> ResourceChange:
    """A resource on both sides, changed in place or replaced."""
    warnings = tuple(_warnings(kind, old, new, rules))
    named = kind == "replace" and new.type.startswith("kubernetes:") and (new.inputs.get("metadata") or {}).get("name")
    notes = ("fixed `metadata.name`: the provider deletes the old object before creating the new one",) if named else ()
    return ResourceChange(kind, new.type, new.name, tuple(fields), tuple(reasons), warnings, summary, notes)


def _cascade_provider_replacements(
    changes: dict[str, ResourceChange], base: Render, head: Render, rules: Rules
) -> None:
    """Every resource of a replaced provider is replaced with it (it now lives in another cluster)."""
    replaced_providers = {
        f"{c.type}::{c.name}" for c in changes.values() if c.kind == "replace" and c.type.startswith(PROVIDER_PREFIX)
    }
    for urn, resource in head.resources.items():
        provider = resource.provider
        if provider not in replaced_providers or urn not in base.resources:
            continue
        current = changes.get(urn)
        reasons = (*(current.reasons if current else ()), f"its provider `{provider}` is replaced")
        changes[urn] = _change(
            "replace", base.resources[urn], resource, current.fields if current else (), reasons, rules
        )


def diff_resources(base: Render, head: Render, rules: Rules) -> list[ResourceChange]:
    changes: dict[str, ResourceChange] = {}
    removed = {u: r for u, r in base.resources.items() if u not in head.resources}
    added = {u: r for u, r in head.resources.items() if u not in base.resources}
    moved_from = {(r.type, r.name): u for u, r in removed.items()}
    for urn, new in added.items():
        old_urn = moved_from.pop((new.type, new.name), None)
        if old_urn is None:
            summary = summarize(new)
            grants = isinstance(new.inputs.get("policy"), str) and "Allow" in summary
            changes[urn] = ResourceChange("add", new.type, new.name, summary=summary, grants_access=grants)
            continue
        old = removed.pop(old_urn)
        reason = f"URN `{old_urn}` → `{urn}`: {rules.urn_change_note}"
        changes[urn] = _change(
            "replace", old, new, _field_changes(old, new), [reason], rules, _dependents_note(head, new)
        )
    for urn, old in removed.items():
        changes[urn] = ResourceChange(
            "remove", old.type, old.name, warnings=tuple(_warnings("remove", old, None, rules)), summary=summarize(old)
        )
    for urn in base.resources.keys() & head.resources.keys():
        change = _compare_common(base, head, urn, rules)
        if change is not None:
            changes[urn] = change
    _cascade_provider_replacements(changes, base, head, rules)
    return sorted(changes.values(), key=lambda c: (KINDS.index(c.kind), c.type, c.name))


def _shown_outputs(render: Render) -> dict[str, Any]:
    """Outputs without the secret ones (kubeconfig): nothing of theirs is ever compared or printed."""
    return {k: v for k, v in render.outputs.items() if v != SECRET and k not in ALWAYS_HIDDEN_KEYS}


def diff_stack(
    stack: str,
    base: Render,
    head: Render,
    rules: Rules,
    surge: bool = False,
    criteria: Optional[DemandCriteria] = None,
    base_criteria: Optional[DemandCriteria] = None,
) -> StackDiff:
    """`surge`: the head stack's `dynamo.targetSwap` is `surge` (its pools have room for old and new).
    `criteria`, `base_criteria`: each side's demand (default: the catalog's published criteria)."""
    catalog = load_catalog()
    criteria = criteria or stack_criteria({}, catalog)
    swap = swap_refusal(
        deployed_dynamo_targets(base.outputs.get("endpoints")),
        deployed_dynamo_targets(head.outputs.get("endpoints")),
        catalog,
        surge,
    )
    return StackDiff(
        stack=stack,
        resources=tuple(diff_resources(base, head, rules)),
        cost=diff_costs(base, head),
        base_violations=base.violations,
        head_violations=head.violations,
        outputs=tuple(diff_values(_shown_outputs(base), _shown_outputs(head), "outputs")),
        engine_notes=(f"`pulumi up` refuses this change: {swap}",) if swap else (),
        pool_rolls=pool_rolls(base, head),
        criteria=criteria,
        demand_misses=demand_misses(base.outputs, head.outputs, criteria, base_criteria or criteria, catalog),
        warnings=head.warnings,
    )
