"""The recorded resources (resources.json records) as the dependency graph the engine walks.

A resource waits for its recorded dependencies (explicit `dependsOn` and the property dependencies the SDK
records for inputs built from other resources' outputs), for its provider, and for its parent component:
the SDK registers a child only after the parent's URN resolves, which happens after the parent's own
dependencies are created. So a child of a component that depends on X is ordered after X.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
PROVIDER_PREFIX = "pulumi:providers:"
STACK_TYPE = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class Resource:
    """One record of resources.json (`record`), with the engine options the model reads."""

    type: str
    name: str
    parent: str
    custom: bool
    provider: str
    depends_on: tuple[str, ...]
    property_dependencies: Mapping[str, tuple[str, ...]]
    protect: bool
    retain_on_delete: bool
    delete_before_replace: bool
    replace_on_changes: tuple[str, ...]
    custom_timeouts: Mapping[str, str]
    inputs: Mapping[str, Any] = field(repr=False)
    record: dict[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        """`type::name`, the form parent, provider and dependsOn use."""
        return f"{self.type}::{self.name}"

    @property
    def is_kubernetes_object(self) -> bool:
        return self.custom and self.type.startswith("kubernetes:") and self.type != HELM_RELEASE

    @property
    def is_provider(self) -> bool:
        return self.type.startswith(PROVIDER_PREFIX)

    @property
    def kind(self) -> str:
        return str(self.inputs.get("kind", "")) if self.is_kubernetes_object else ""

    @property
    def metadata(self) -> Mapping[str, Any]:
        metadata = self.inputs.get("metadata") or {}
        return metadata if isinstance(metadata, dict) else {}

    @property
    def namespace(self) -> str:
        if self.type == HELM_RELEASE:
            return str(self.inputs.get("namespace", ""))
        return str(self.metadata.get("namespace", ""))

    @property
    def object_name(self) -> str:
        """The Kubernetes object or Helm release name."""
        if self.type == HELM_RELEASE:
            return str(self.inputs.get("name", ""))
        return str(self.metadata.get("name", ""))

    @property
    def annotations(self) -> Mapping[str, str]:
        return self.metadata.get("annotations") or {}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Resource:
        return cls(
            type=record["type"],
            name=record["name"],
            parent=record.get("parent", ""),
            custom=bool(record.get("custom", True)),
            provider=record.get("provider", ""),
            depends_on=tuple(record.get("dependsOn", ())),
            property_dependencies={k: tuple(v) for k, v in (record.get("propertyDependencies") or {}).items()},
            protect=bool(record.get("protect", False)),
            retain_on_delete=bool(record.get("retainOnDelete", False)),
            delete_before_replace=bool(record.get("deleteBeforeReplace", False)),
            replace_on_changes=tuple(record.get("replaceOnChanges") or ()),
            custom_timeouts=dict(record.get("customTimeouts") or {}),
            inputs=record.get("inputs") or {},
            record=dict(record),
        )


def lookup(value: Any, path: str) -> Any:
    """The value at a dotted path (`spec.template.spec`); `[]` in a segment maps over a list."""
    values = [value]
    for segment in path.split("."):
        mapped = segment.endswith("[]")
        key = segment[:-2] if mapped else segment
        values = [v.get(key) for v in values if isinstance(v, dict)]
        if mapped:
            values = [item for v in values if isinstance(v, list) for item in v]
    found = [v for v in values if v is not None]
    return found if "[]" in path else (found[0] if found else None)


class StackGraph:
    """The resources of one stack and the order the engine creates them in."""

    def __init__(self, records: Iterable[Mapping[str, Any]]) -> None:
        # By key, not in registration order: the mock runtime registers in whatever order outputs resolve,
        # and every report built from the graph must read the same on every render.
        resources = sorted((Resource.from_record(record) for record in records), key=lambda r: r.key)
        self.resources: dict[str, Resource] = {r.key: r for r in resources}
        self._ancestors: dict[str, frozenset[str]] = {}
        objects = [r for r in self.resources.values() if r.is_kubernetes_object]
        self._objects: dict[str, list[Resource]] = {"": objects}  # "" = every kind
        for resource in objects:
            if resource.kind:
                self._objects.setdefault(resource.kind, []).append(resource)

    def __iter__(self) -> Iterator[Resource]:
        return iter(self.resources.values())

    def get(self, key: str) -> Resource | None:
        return self.resources.get(key)

    def named(self, name: str) -> Resource:
        (match,) = [r for r in self if r.name == name]
        return match

    def of_type(self, type_token: str) -> list[Resource]:
        return [r for r in self if r.type == type_token]

    def kubernetes_objects(self, kind: str = "") -> list[Resource]:
        """The Kubernetes objects (of `kind`, if given), by key."""
        return list(self._objects.get(kind, ()))

    def find_object(self, kind: str, name: str, namespace: str = "") -> Resource | None:
        objects = self.kubernetes_objects(kind)
        return next((r for r in objects if r.object_name == name and r.namespace == namespace), None)

    @functools.cached_property
    def _direct(self) -> dict[str, frozenset[str]]:
        direct: dict[str, frozenset[str]] = {}
        for resource in self:
            edges = set(resource.depends_on)
            for deps in resource.property_dependencies.values():
                edges.update(deps)
            if resource.provider:
                edges.add(resource.provider)
            if resource.parent in self.resources:
                edges.add(resource.parent)
            direct[resource.key] = frozenset(e for e in edges if e in self.resources)
        return direct

    def direct_dependencies(self, key: str) -> frozenset[str]:
        """What must be created before this resource starts: deps, provider, parent component."""
        return self._direct[key]

    def ancestors(self, key: str) -> frozenset[str]:
        """Every resource ordered before this one (transitively)."""
        if key not in self._ancestors:
            found: set[str] = set()
            stack = list(self._direct[key])
            while stack:
                current = stack.pop()
                if current not in found:
                    found.add(current)
                    stack.extend(self._direct[current])
            self._ancestors[key] = frozenset(found)
        return self._ancestors[key]

    def ordered_before(self, first: str, then: str) -> bool:
        return first in self.ancestors(then)

    @functools.cached_property
    def dependents(self) -> dict[str, list[str]]:
        """Key -> the resources that wait for it directly, by key."""
        return {key: sorted(k for k, deps in self._direct.items() if key in deps) for key in self.resources}

    def topological_order(self) -> list[str]:
        """Keys in an order where every resource follows what it waits for (stable by key)."""
        order: list[str] = []
        placed: set[str] = set()
        remaining = sorted(self.resources)
        while remaining:
            ready = [k for k in remaining if self._direct[k] <= placed]
            if not ready:
                raise ValueError(f"dependency cycle among: {', '.join(remaining)}")
            order.extend(ready)
            placed.update(ready)
            remaining = [k for k in remaining if k not in placed]
        return order

    def kubernetes_cluster_in_stack(self, resource: Resource) -> Resource | None:
        """The EKS cluster this stack creates and whose Kubernetes provider deploys `resource`, if any."""
        provider = self.get(resource.provider)
        if provider is None:
            return None
        ancestors = (self.resources[key] for key in self.ancestors(provider.key))
        return next((r for r in ancestors if r.type == "aws:eks/cluster:Cluster"), None)
