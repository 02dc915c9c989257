"""Why each step on the critical path to a resource waits for the one before it (cold_start.py prints it).

An edge is one of: `readiness` (the step's pods need the other resource: a prerequisite read from the pod specs
or the operator), `data` (an input is built from the other's outputs), `dependsOn` (an ordering the program
declares; the model cannot see why), `provider` (deployed through a provider that waits for it), `parent`
(a child of a component that depends on it). Data and readiness edges cannot be overlapped; a declared
ordering is the program's choice, so those are the places to look for a shorter path.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.rollout.graph import StackGraph
from tools.rollout.schedule import Step, Timeline

READINESS, DATA, DEPENDS_ON, PROVIDER, PARENT = "readiness", "data", "dependsOn", "provider", "parent"
INHERENT = frozenset({READINESS, DATA})


@dataclass(frozen=True)
class Hop:
    """A displayed step of the critical path and why it starts (or becomes ready) after `after`."""

    step: Step
    after: str  # the previous displayed step's resource name ("" for the first)
    kinds: tuple[str, ...]  # edge kinds along the way (components and providers in between)
    why: str

    @property
    def inherent(self) -> bool:
        """Whether the wait is data or readiness all the way (no declared ordering in between)."""
        return (
            bool(self.kinds)
            and all(kind in INHERENT or kind in (PROVIDER, PARENT) for kind in self.kinds)
            and any(kind in INHERENT for kind in self.kinds)
        )


def _edge(graph: StackGraph, step: Step, gate: str) -> tuple[str, str]:
    """The kind of the edge from `step` to the key it waited for, and a phrase saying why."""
    resource, other = step.resource, graph.resources[gate]
    for need in step.prerequisites:
        if need.key == gate:
            return READINESS, need.reason
    props = sorted(prop for prop, deps in resource.property_dependencies.items() if gate in deps)
    if props:
        return DATA, f"its input {', '.join(props)} is built from {other.name}'s outputs"
    if gate in resource.depends_on:
        return DEPENDS_ON, f"dependsOn {other.name}"
    if gate == resource.provider:
        return PROVIDER, f"it is deployed through provider {other.name}"
    return PARENT, f"it is a child of component {other.name}"


def _displayed(step: Step) -> bool:
    return step.resource.custom and not step.resource.is_provider


def explain(graph: StackGraph, timeline: Timeline, key: str) -> list[Hop]:
    """The critical path to `key` (first step first), each step with why it waits for the one before."""
    hops: list[Hop] = []
    for step in timeline.path_to(key):
        kinds: list[str] = []
        phrases: list[str] = []
        current, after = step, ""
        while current.gated_by and current.gated_by != current.resource.key:
            kind, why = _edge(graph, current, current.gated_by)
            kinds.append(kind)
            phrases.append(why)
            current = timeline.steps[current.gated_by]
            if _displayed(current):
                after = current.resource.name
                break
        hops.append(Hop(step, after, tuple(kinds), ", which ".join(phrases) if after else "nothing before it"))
    return hops
