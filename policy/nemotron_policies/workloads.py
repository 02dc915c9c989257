"""Reading what matters about a pod spec: containers, arguments, env, resources, node selection, volumes.

Works on `values.plain()` data; `pods.pod_specs` finds the pod specs of a resource. Every reader returns
`UNKNOWN` rather than guessing when a value is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .names import MODEL_CACHE_CLAIM
from .values import UNKNOWN, as_dict, as_list, count, dig, text

WORKER_TYPES = ("worker", "prefill", "decode")
DISAGGREGATED_TYPES = ("prefill", "decode")
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


@dataclass(frozen=True)
class PodSpec:
    """One pod (template) a resource declares. `owner` names it in messages; `component_type` is the Dynamo
    component type (frontend/worker/prefill/decode/...) or None for other workloads; `namespace` is the
    namespace of the object that declares it."""

    owner: str
    spec: Any
    component_type: Optional[str] = None
    component_name: Optional[str] = None
    namespace: Any = None

    @property
    def is_worker(self) -> bool:
        return self.component_type in WORKER_TYPES


def containers(spec: Any, lists: tuple[str, ...] = CONTAINER_LISTS) -> list[dict[str, Any]]:
    """Known containers of a pod spec, init and ephemeral containers included by default."""
    return [c for field in lists for c in as_list(dig(spec, field)) if isinstance(c, dict)]


def container_label(container: dict[str, Any], pod: PodSpec) -> str:
    return f"container {text(container.get('name')) or '?'} of {pod.owner}"


def main_container(spec: Any) -> Optional[dict[str, Any]]:
    """The container Dynamo runs the engine in (`main`)."""
    return next((c for c in containers(spec, ("containers",)) if c.get("name") == "main"), None)


def env_entry(container: dict[str, Any], name: str) -> Optional[dict[str, Any]]:
    return next((e for e in as_list(container.get("env")) if isinstance(e, dict) and e.get("name") == name), None)


def resource_count(container: dict[str, Any], section: str, name: str) -> Any:
    """`resources.<section>.<name>` as a whole number (None when absent, `UNKNOWN` when unknown)."""
    return count(dig(container, "resources", section, name))


def node_selection(spec: Any) -> Any:
    """The nodes a pod may run on, as a comparable value: a frozenset of required node-selector terms, each a
    frozenset of `(key, operator, values)` with `nodeSelector` entries folded in as `key In [value]`.
    Two pods with equal selections are pinned to the same nodes. `UNKNOWN` if any part is unknown."""
    node_selector = dig(spec, "nodeSelector")
    required = dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    terms = dig(required, "nodeSelectorTerms")
    if UNKNOWN in (node_selector, required, terms):
        return UNKNOWN
    from_selector: list[tuple[Any, ...]] = []
    for key, value in as_dict(node_selector).items():
        if value is UNKNOWN or isinstance(value, (dict, list)):
            return UNKNOWN
        from_selector.append((key, "In", (str(value),)))
    selection = set()
    for term in as_list(terms) or [{}]:
        expressions: list[tuple[Any, ...]] = list(from_selector)
        for expression in as_list(dig(term, "matchExpressions")) + as_list(dig(term, "matchFields")):
            key, operator, values = dig(expression, "key"), dig(expression, "operator"), dig(expression, "values")
            if (
                UNKNOWN in (expression, key, operator, values)
                or UNKNOWN in as_list(values)
                or not isinstance(key, str)
                or not isinstance(operator, str)
            ):
                return UNKNOWN  # unknown, or malformed (the API server would refuse it)
            expressions.append((key, operator, tuple(sorted(str(v) for v in as_list(values)))))
        if expressions:
            selection.add(frozenset(expressions))
    return frozenset(selection)


def describe_selection(selection: Any) -> str:
    if not selection:
        return "any node"
    terms = [
        " and ".join(f"{k} {op} [{', '.join(v)}]" if v else f"{k} {op}" for k, op, v in sorted(term))
        for term in selection
    ]
    return " or ".join(sorted(terms))


def pinned_values(selection: Any, label: str) -> Optional[set[str]]:
    """The values `label` is pinned to (`In`) in every term of a selection; None if some term leaves it free."""
    if not selection or selection is UNKNOWN:
        return None
    pinned: set[str] = set()
    for term in selection:
        values = [v for k, op, v in term if k == label and op == "In"]
        if not values:
            return None
        pinned.update(*values)
    return pinned


def tolerations(spec: Any) -> Any:
    """Known tolerations as `(key, operator, value, effect)` tuples (operator defaults to Equal)."""
    listed = dig(spec, "tolerations")
    if listed is UNKNOWN:
        return UNKNOWN
    normalized = set()
    for toleration in as_list(listed):
        fields = [dig(toleration, f) for f in ("key", "operator", "value", "effect")]
        if toleration is UNKNOWN or UNKNOWN in fields or any(isinstance(f, (dict, list)) for f in fields):
            return UNKNOWN
        key, operator, value, effect = fields
        normalized.add((key or "", operator or "Equal", "" if value is None else str(value), effect or ""))
    return frozenset(normalized)


def tolerates(toleration: tuple[str, str, str, str], other: tuple[str, str, str, str]) -> bool:
    """Does `toleration` tolerate every taint that `other` tolerates?"""
    key, operator, value, effect = toleration
    other_key, other_operator, other_value, other_effect = other
    if effect and effect != other_effect:
        return False
    if operator == "Exists":
        return not key or key == other_key
    return key == other_key and other_operator != "Exists" and value == other_value


def claim_volume_names(spec: Any, claim: str = MODEL_CACHE_CLAIM) -> list[str]:
    """Names of the pod's volumes that reference the persistent volume claim `claim`."""
    return [
        text(v.get("name")) or ""
        for v in as_list(dig(spec, "volumes"))
        if isinstance(v, dict) and dig(v, "persistentVolumeClaim", "claimName") == claim
    ]


def volume_mounts(spec: Any, volume: str) -> list[dict[str, Any]]:
    return [
        m
        for c in containers(spec)
        for m in as_list(c.get("volumeMounts"))
        if isinstance(m, dict) and m.get("name") == volume
    ]
