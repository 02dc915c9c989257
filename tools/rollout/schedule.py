"""The timeline of a first `pulumi up` from an empty account: every resource starts when what it depends on
is done (the engine runs independent branches in parallel), is ready once its own work and its readiness
prerequisites are done, and `up` moves past it either then (awaited) or at once (not awaited): the provider's
await rule applied to the resource's recorded options (customTimeouts) and annotations (skipAwait,
timeoutSeconds, waitFor).

Computed twice: with typical durations (the predicted timeline) and with worst-case durations (for the
"can this wait expire?" checks).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from tools.rollout.durations import SAGEMAKER_ENDPOINT, Part, Placed, layout, serving_parts, work
from tools.rollout.graph import HELM_RELEASE, Resource, StackGraph
from tools.rollout.rules import Rules, Span
from tools.rollout.volumes import binding
from tools.rollout.workloads import (
    DOWNLOAD_REASON,
    NODE_GROUP,
    PREPULL_REASON,
    PREWARM_REASON,
    Prerequisite,
    prerequisites,
)

DYNAMO_KIND = "DynamoGraphDeployment"  # the serving kind: a Dynamo graph
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}


def go_duration_seconds(text: str) -> float:
    """`"1h30m"`, `"70m"`, `"300s"` (customTimeouts strings) in seconds."""
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


@dataclass(frozen=True)
class Await:
    """What `up` waits for after creating a resource, and for how long (None: it does not wait)."""

    timeout_seconds: float | None
    ready_when: str
    timeout_basis: str
    source: str  # a key of provider_rules.yaml `sources`

    @property
    def awaited(self) -> bool:
        return self.timeout_seconds is not None


def _true(value: object) -> bool:
    return str(value).lower() == "true"


def await_of(resource: Resource, rules: Rules) -> Await | None:
    """The wait for a Kubernetes object or Helm release; None for everything else (their provider's
    create call returns when the cloud resource is ready, which the durations model covers)."""
    if resource.type == HELM_RELEASE:
        helm, inputs = rules.helm, resource.inputs
        if _true(inputs.get("skipAwait")):
            return Await(None, "not awaited (skipAwait)", "", helm["source"])
        if "timeout" in inputs:
            return Await(float(inputs["timeout"]), helm["ready_when"], f"timeout: {inputs['timeout']}", helm["source"])
        seconds = helm["default_timeout_seconds"]
        return Await(float(seconds), helm["ready_when"], f"default {seconds} s", helm["source"])
    if not resource.is_kubernetes_object:
        return None
    annotations, names = resource.annotations, rules.annotations
    kind_rule = rules.kinds.get(resource.kind)
    source = kind_rule.source if kind_rule else "k8s-overrides"
    if _true(annotations.get(names["skip_await"])):
        return Await(None, f'{names["skip_await"]}: "true"', "", source)
    wait_for = annotations.get(names["wait_for"])
    if not wait_for and (kind_rule is None or kind_rule.immediate):
        return Await(None, kind_rule.ready_when if kind_rule else rules.custom_resource_ready_when, "", source)
    configured, basis = None, ""
    if create := resource.custom_timeouts.get("create"):
        configured, basis = go_duration_seconds(create), f"customTimeouts.create {create}"
    elif (seconds := annotations.get(names["timeout_seconds"])) and str(seconds).isdigit():
        configured, basis = float(seconds), f"{names['timeout_seconds']}: {seconds}"
    if wait_for:
        timeout = configured if configured is not None else rules.default_timeout_seconds
        return Await(timeout, f"{names['wait_for']}: {wait_for}", basis or f"default {timeout:.0f} s", source)
    assert kind_rule is not None
    if kind_rule.timeout_fixed:
        timeout = min(
            kind_rule.timeout_seconds, configured if configured is not None else rules.default_timeout_seconds
        )
        basis = f"hard-coded {kind_rule.timeout_seconds:.0f} s (customTimeouts cannot extend it)"
        return Await(timeout, kind_rule.ready_when, basis, source)
    timeout = configured if configured is not None else kind_rule.timeout_seconds
    return Await(timeout, kind_rule.ready_when, basis or f"default {kind_rule.timeout_seconds:.0f} s", source)


@dataclass(frozen=True)
class Step:
    """One resource on the timeline (minutes from the start of `up`)."""

    resource: Resource
    work: Span
    wait: Await | None
    prerequisites: tuple[Prerequisite, ...]
    start: float
    ready: float
    up_done: float
    start_worst: float
    ready_worst: float
    gated_by: str  # the key whose completion decided when this step was ready ("" at the root)
    parts: tuple[Placed, ...] = ()  # a serving resource's own steps, seconds from the start of `up`

    @property
    def awaited(self) -> bool:
        return self.wait is None or self.wait.awaited

    @property
    def settled(self) -> bool:
        """Whether `up` moves past this step only once it is ready (what is ordered after it can rely on it)."""
        return self.up_done >= self.ready - 1e-9


def _awaited_work(graph: StackGraph, resource: Resource, rules: Rules, wait: Await | None, span: Span) -> Span:
    """The part of the work `up` itself waits for (a claim on a WaitForFirstConsumer class: none)."""
    if wait is not None and not wait.awaited:
        return Span(0.0, 0.0, "")
    if resource.kind == "PersistentVolumeClaim" and binding(graph, resource, rules).mode == "WaitForFirstConsumer":
        return Span(0.0, 0.0, "")
    return span


class Timeline:
    """Typical and worst-case schedule of every resource of a stack."""

    def __init__(self, graph: StackGraph, rules: Rules) -> None:
        self.graph = graph
        self.steps: dict[str, Step] = {}
        needs = {r.key: tuple(prerequisites(graph, r, rules)) for r in graph}
        for key in self._order(needs):
            resource = graph.resources[key]
            wait = await_of(resource, rules)
            span = work(graph, resource, rules)
            deps = graph.direct_dependencies(key)
            start = max((self.steps[d].up_done for d in deps), default=0.0)
            start_worst = max((self._up_done_worst(d) for d in deps), default=0.0)
            gates = {p.key for p in needs[key] if p.key in self.steps}
            gate_ready = max([(self.steps[g].ready, g) for g in gates] + [(start, "")])
            gate_worst = max([self.steps[g].ready_worst for g in gates] + [start_worst])
            ready, ready_worst = gate_ready[0] + span.typical, gate_worst + span.max
            parts: tuple[Placed, ...] = ()
            if span.node is not None:
                parts = layout(span.node, start=(ready - span.typical) * 60).placed
            if resource.kind == DYNAMO_KIND:
                ready, gate, parts = self._serving(resource, rules, needs[key], start)
                gate_ready = (ready, gate)
                span = dataclasses.replace(span, typical=ready - start)  # its steps overlap the node's
            awaited_span = _awaited_work(graph, resource, rules, wait, span)
            up_done = max(start + awaited_span.typical, ready if awaited_span.typical else start)
            gated_by = gate_ready[1] or max(((self.steps[d].up_done, d) for d in deps), default=(0.0, ""))[1]
            self.steps[key] = Step(
                resource, span, wait, needs[key], start, ready, up_done, start_worst, ready_worst, gated_by, parts
            )

    def _serving(
        self, resource: Resource, rules: Rules, needs: tuple[Prerequisite, ...], start: float
    ) -> tuple[float, str, tuple[Placed, ...]]:
        """A Dynamo graph's ready time (minutes), the key that decided it and its steps as they overlap: its
        pods start once what they need is ready; the device plugins advertise the GPUs from the node's
        registration; the image pull follows both, or, with a pre-pull DaemonSet on its nodes, runs from the node's
        registration and the pods' own pull is a cache hit; the prewarm (its own DaemonSet, from the node's
        registration, once the download is complete) runs meanwhile, and a gated worker loads once the download
        and the prewarm are done (its init container waits for both, after the pull); then the engine starts."""
        parts = serving_parts(self.graph, resource, rules, cache_warm=False)
        ready_of = {n.key: self.steps[n.key].ready for n in needs if n.key in self.steps}
        nodes = {k: t for k, t in ready_of.items() if self.graph.resources[k].type == NODE_GROUP}
        prewarm = {
            n.key: ready_of[n.key]
            for n in needs
            if n.key in ready_of and n.reason.startswith((PREWARM_REASON, DOWNLOAD_REASON))
        }
        prepull = {n.key: ready_of[n.key] for n in needs if n.key in ready_of and n.reason.startswith(PREPULL_REASON)}
        others = {k: t for k, t in ready_of.items() if k not in nodes and k not in prewarm and k not in prepull}
        pods_start, start_key = max([(t, k) for k, t in others.items()] + [(start, "")])
        placed: list[tuple[Part, float]] = []
        plugins_end, deciding = 0.0, start_key
        if nodes:  # nodes of the stack's own groups; on nodes that already run, the GPUs are advertised
            node_ready, node_key = max((t, k) for k, t in nodes.items())
            placed.append((parts.plugins, node_ready * 60))
            plugins_end = node_ready * 60 + parts.plugins.seconds
            deciding = node_key if plugins_end >= pods_start * 60 else start_key
        pull_start = max(pods_start * 60, plugins_end)
        pulled, prepulled = pull_start, set()
        if prepull:  # a DaemonSet pulled the images from the node's registration: the pods' pull is a cache hit
            done, pull_key = max((t * 60, k) for k, t in prepull.items())
            for step in (p for p in self.steps[pull_key].parts if p.part.seconds >= 1):
                named = dataclasses.replace(
                    step.part, name=f"DaemonSet {self.steps[pull_key].resource.object_name}: {step.part.name}"
                )
                placed.append((named, step.start))
                prepulled.add(id(named))
            if done > pulled:
                pulled, deciding = done, pull_key
        elif parts.pull is not None:
            placed.append((parts.pull, pull_start))
            pulled += parts.pull.seconds
        warm_ready, warm_key = max([(t * 60, k) for k, t in prewarm.items()] + [(0.0, "")])
        opened = pulled
        if parts.gated and warm_ready > pulled:
            opened, deciding = warm_ready, warm_key
        for key in sorted(prewarm, key=prewarm.__getitem__) if parts.gated else ():  # the gate's, beside the pull
            gate = self.steps[key].resource
            for step in (p for p in self.steps[key].parts if p.part.seconds >= 1):
                named = dataclasses.replace(step.part, name=f"{gate.kind} {gate.object_name}: {step.part.name}")
                placed.append((named, step.start))
        placed += [(parts.load, opened), (parts.engine, opened + parts.load.seconds)]
        ready = (opened + parts.load.seconds + parts.engine.seconds) / 60
        critical = {id(parts.load), id(parts.engine)}
        if opened == pulled:
            critical |= {id(parts.pull)} if not prepull else {i for i in prepulled if pulled > pull_start}
        critical |= {id(part) for part, at in placed if opened > pulled and at + part.seconds == opened}
        if opened == pulled and pulled == plugins_end:
            critical.add(id(parts.plugins))
        return (
            ready,
            deciding,
            tuple(Placed(p, at, at + p.seconds, id(p) in critical) for p, at in placed),
        )

    def _up_done_worst(self, key: str) -> float:
        step = self.steps[key]
        return step.ready_worst if step.up_done >= step.ready and step.work.typical else step.start_worst

    def _order(self, needs: dict[str, tuple[Prerequisite, ...]]) -> list[str]:
        """Dependencies first, and readiness prerequisites before what needs them where that is acyclic."""
        placed: set[str] = set()
        order: list[str] = []
        remaining = self.graph.topological_order()
        while remaining:
            ready = [
                k
                for k in remaining
                if self.graph.direct_dependencies(k) <= placed
                and all(p.key in placed or not p.key or p.key not in self.graph.resources for p in needs[k])
            ] or [k for k in remaining if self.graph.direct_dependencies(k) <= placed][:1]
            order.extend(ready)
            placed.update(ready)
            remaining = [k for k in remaining if k not in placed]
        return order

    def serving(self) -> list[Step]:
        """Steps after which a client can get a token: Dynamo graphs and SageMaker endpoints."""
        return [
            s for s in self.steps.values() if s.resource.kind == DYNAMO_KIND or s.resource.type == SAGEMAKER_ENDPOINT
        ]

    def up_minutes(self) -> float:
        return max((s.up_done for s in self.steps.values()), default=0.0)

    def path_to(self, key: str) -> list[Step]:
        """The chain of steps that decided when `key` became ready (the critical path), first step first."""
        path: list[Step] = []
        current = key
        while current:
            step = self.steps[current]
            path.append(step)
            current = step.gated_by if step.gated_by != current else ""
        return [s for s in reversed(path) if s.resource.custom and not s.resource.is_provider]
