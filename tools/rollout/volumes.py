"""How a claim gets its volume, and where its data lives.

Two ways: its StorageClass's provisioner creates a volume (dynamic), or the stack creates a PersistentVolume
that names the claim (`spec.claimRef`) or that the claim names (`spec.volumeName`): static, bound in the PV
controller's next sync once both exist, provided the volume satisfies the claim (the PV controller's
checkVolumeSatisfyClaim: capacity, storageClassName, volumeMode, access modes; a volume reserved for another
claim is never bound to this one). The data of a static volume lives in the cloud resource its inputs are
built from (the FSx file system behind `spec.csi.volumeHandle`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from serving_stack.config.types import QUANTITY, quantity_value
from tools.rollout.graph import Resource, StackGraph, lookup
from tools.rollout.replacements import data_role
from tools.rollout.rules import Rules, Span

PV_KIND = "PersistentVolume"
STATIC, OUTSIDE_STACK = "static-volume-bind", "outside-stack-volume-bind"  # steps of catalog/durations.yaml


@dataclass(frozen=True)
class Binding:
    """How a claim binds: `mode` is the class's volumeBindingMode, "static" for a volume of the stack, or ""
    when the class is outside the stack; `mismatch` says why a static volume can never bind the claim."""

    span: Span
    mode: str
    volume: Resource | None = None
    mismatch: str = ""


def _claim_ref(volume: Resource) -> tuple[str, str]:
    ref = lookup(volume.inputs, "spec.claimRef") or {}
    return str(ref.get("namespace", "")), str(ref.get("name", ""))


def static_volume(graph: StackGraph, claim: Resource) -> Resource | None:
    """The stack's PersistentVolume the claim names, or else the one whose claimRef names the claim."""
    if name := lookup(claim.inputs, "spec.volumeName"):
        return graph.find_object(PV_KIND, str(name))
    named = (claim.namespace, claim.object_name)
    return next((v for v in graph.kubernetes_objects(PV_KIND) if _claim_ref(v) == named), None)


def mismatch(claim: Resource, volume: Resource) -> str:
    """Why the PV controller never binds this volume to this claim ("" when it does)."""
    ref = _claim_ref(volume)
    if any(ref) and ref != (claim.namespace, claim.object_name):
        return f"its claimRef reserves it for claim {ref[0]}/{ref[1]}"
    requested = str(lookup(claim.inputs, "spec.resources.requests.storage"))
    capacity = str(lookup(volume.inputs, "spec.capacity.storage"))
    sized = all(re.fullmatch(QUANTITY, q) for q in (requested, capacity))
    if sized and quantity_value(capacity) < quantity_value(requested):
        return f"its capacity {capacity} is less than the claim's request {requested}"
    classes = tuple(str(lookup(o.inputs, "spec.storageClassName") or "") for o in (volume, claim))
    if classes[0] != classes[1]:
        return f"its storageClassName {classes[0]!r} is not the claim's {classes[1]!r}"
    modes = tuple(lookup(o.inputs, "spec.volumeMode") or "Filesystem" for o in (volume, claim))
    if modes[0] != modes[1]:
        return f"its volumeMode {modes[0]} is not the claim's {modes[1]}"
    missing = set(lookup(claim.inputs, "spec.accessModes") or ()) - set(lookup(volume.inputs, "spec.accessModes") or ())
    if missing:
        return f"it does not offer the claim's access mode(s) {', '.join(sorted(missing))}"
    return ""


def binding(graph: StackGraph, claim: Resource, rules: Rules) -> Binding:
    """How long the claim takes to bind once created, and how."""
    volume = static_volume(graph, claim)
    if volume is not None:
        return Binding(rules.span(STATIC), "static", volume, mismatch(claim, volume))
    class_name = str(lookup(claim.inputs, "spec.storageClassName") or "")
    storage_class = graph.find_object("StorageClass", class_name)
    if storage_class is None:
        return Binding(rules.span(OUTSIDE_STACK), "")
    provisioner = rules.provisioners.get(str(storage_class.inputs.get("provisioner", "")))
    step = provisioner["duration"] if provisioner else OUTSIDE_STACK
    return Binding(rules.span(step), str(storage_class.inputs.get("volumeBindingMode", "Immediate")))


def data_behind(graph: StackGraph, volume: Resource, rules: Rules) -> Resource | None:
    """The cloud resource holding a static volume's data: one with a data role its inputs are built from."""
    sources = (graph.get(key) for deps in volume.property_dependencies.values() for key in deps)
    return next((s for s in sources if s is not None and not s.is_kubernetes_object and data_role(s, rules)), None)


def rebind_note(graph: StackGraph, claim: Resource, rules: Rules) -> str:
    """What replacing a claim bound to a static Retain volume does: the volume stays Released (k8s-retain)."""
    volume = binding(graph, claim, rules).volume
    if volume is None or (lookup(volume.inputs, "spec.persistentVolumeReclaimPolicy") or "Retain") != "Retain":
        return ""
    return (
        f"replaced alone, it leaves PersistentVolume {volume.object_name} Released (Retain keeps the old claim "
        f"in its claimRef, k8s-retain): the new claim stays Pending until that volume is replaced too"
    )
