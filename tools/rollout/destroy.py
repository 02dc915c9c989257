"""What `pulumi destroy` keeps and deletes.

The engine deletes a resource only after everything that depends on it, so `protect` stops the destroy at
that resource and keeps everything it depends on (its namespace, provider, cluster, network: what
`--exclude-protected` leaves, pulumi/pulumi#8359). `retainOnDelete` makes Pulumi forget a resource, but what
contains it may still take it along: deleting a Namespace deletes everything in it, deleting the EKS cluster
every Kubernetes object. A deleted claim's dynamically provisioned volume follows its class's reclaimPolicy; the
data of a static volume stays with the cloud resource behind it (a file system of the stack: its own row says
whether destroy keeps it); a bucket with objects fails to delete unless forceDestroy; a KMS key is only
scheduled for deletion.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.rollout.findings import DESTROY, Finding
from tools.rollout.graph import HELM_RELEASE, Resource, StackGraph, lookup
from tools.rollout.replacements import data_role
from tools.rollout.rules import Rules
from tools.rollout.volumes import PV_KIND, binding, data_behind

KEPT = "kept"
DELETED = "deleted"
REFUSED = "refused"
FAILS = "fails if not empty"


@dataclass(frozen=True)
class DestroyRow:
    resource: Resource
    data_role: str
    outcome: str  # kept / deleted / refused / fails if not empty
    how: str  # why, and what follows


def _taken_along(graph: StackGraph, resource: Resource, decided: dict[str, DestroyRow]) -> str:
    """What deletes a Kubernetes object although Pulumi keeps it ("" when nothing does)."""
    if not resource.is_kubernetes_object:
        return ""
    cluster = graph.kubernetes_cluster_in_stack(resource)
    if cluster is not None and decided[cluster.key].outcome == DELETED:
        return f"deleted with the EKS cluster {cluster.name}"
    namespace = graph.find_object("Namespace", resource.namespace) if resource.namespace else None
    if namespace is not None and decided[namespace.key].outcome == DELETED:
        return f"deleted by the cascade of Namespace {resource.namespace}, which destroy deletes"
    return ""


def _data_home(graph: StackGraph, volume: Resource, rules: Rules, decided: dict[str, DestroyRow]) -> str:
    """Where a static volume's data lives and what destroy does to it."""
    policy = lookup(volume.inputs, "spec.persistentVolumeReclaimPolicy") or "Retain"
    home = data_behind(graph, volume, rules)
    if home is None:
        return f"its data lives behind volume {volume.object_name} (reclaimPolicy {policy}), outside the stack"
    fate = decided[home.key]
    if fate.outcome == DELETED:
        return f"its data is deleted with {home.name} ({home.type.split(':')[-1]}), which destroy deletes"
    kept = "protected" if fate.outcome == REFUSED else fate.how
    return (
        f"its data is kept in {home.name} ({home.type.split(':')[-1]}, {kept}) through volume "
        f"{volume.object_name} (reclaimPolicy {policy})"
    )


def _volume_fate(graph: StackGraph, claim: Resource, rules: Rules, decided: dict[str, DestroyRow]) -> str:
    bound = binding(graph, claim, rules)
    if bound.volume is not None:
        return _data_home(graph, bound.volume, rules, decided)
    class_name = str(lookup(claim.inputs, "spec.storageClassName") or "")
    storage_class = graph.find_object("StorageClass", class_name)
    if storage_class is None:
        return f"its volume follows class {class_name}'s reclaimPolicy (class outside the stack)"
    if storage_class.inputs.get("reclaimPolicy") == "Retain":
        return (
            f"its volume stays outside the stack (class {class_name}: reclaimPolicy Retain; billed until deleted "
            f"by hand)"
        )
    return f"its volume and data are deleted (class {class_name}: reclaimPolicy Delete)"


def _protected_dependents(graph: StackGraph) -> dict[str, str]:
    """Resource key -> a protected resource that depends on it (so destroy cannot delete it)."""
    held: dict[str, str] = {}
    for resource in graph:
        if resource.protect:
            for key in graph.ancestors(resource.key):
                held.setdefault(key, resource.name)
    return held


def destroy_plan(graph: StackGraph, rules: Rules) -> list[DestroyRow]:
    """One row per cloud or Kubernetes resource, containers decided before what they contain."""
    held = _protected_dependents(graph)
    decided: dict[str, DestroyRow] = {}
    for key in graph.topological_order():
        resource = graph.resources[key]
        if not resource.custom or resource.is_provider:
            continue
        deletion = rules.aws_deletion.get(resource.type, {})
        if resource.protect:
            outcome, how = REFUSED, "protected: destroy fails here (`--exclude-protected` keeps it)"
        elif key in held:
            outcome, how = KEPT, f"protected {held[key]} depends on it"
        elif resource.retain_on_delete:
            outcome, how = KEPT, "retainOnDelete: Pulumi forgets it"
            if taken := _taken_along(graph, resource, decided):
                outcome, how = DELETED, f"retainOnDelete, yet {taken}"
        elif "fails_if" in deletion and not resource.inputs.get(deletion["unless_field"]):
            outcome, how = FAILS, f"deleted, but destroy fails if {deletion['fails_if']}"
        elif "window_field" in deletion:
            days = resource.inputs.get(deletion["window_field"], deletion["window_default"])
            outcome = DELETED
            how = f"scheduled for deletion after {days} days; what it encrypted is unreadable after that"
        else:
            outcome, how = DELETED, "deleted"
        finalizer = rules.operators.get(resource.kind, {}).get("finalizer")
        if finalizer and outcome == DELETED:
            wait = resource.custom_timeouts.get("delete") or "its readiness timeout"
            how = (
                f"{how} once the operator removes its finalizer {finalizer} (the delete waits {wait}; with the "
                f"operator stopped or uninstalled first, destroy fails after that wait: k8s-deleted)"
            )
        if resource.kind == "PersistentVolumeClaim" and outcome == DELETED:
            how = f"{how}; {_volume_fate(graph, resource, rules, decided)}"
        if resource.kind == PV_KIND and outcome == DELETED:
            how = (
                f"{how} (the PersistentVolume object; a CSI driver deletes only volumes it provisioned, "
                f"k8s-csi-static); {_data_home(graph, resource, rules, decided)}"
            )
        decided[key] = DestroyRow(resource, data_role(resource, rules), outcome, how)
    return list(decided.values())


def _encrypted_by(graph: StackGraph, key: Resource, rows: dict[str, DestroyRow]) -> list[DestroyRow]:
    """Data resources encrypted with this key: an input of theirs is built from it, or one resource's inputs
    are built from both (an encryption setting of a bucket)."""

    def uses(resource: Resource, target: str) -> bool:
        return any(target in deps for deps in resource.property_dependencies.values())

    wiring = [r for r in graph if uses(r, key.key)]
    return [
        row
        for row in rows.values()
        if row.data_role
        and row.resource.key != key.key
        and (uses(row.resource, key.key) or any(uses(w, row.resource.key) for w in wiring))
    ]


def _cluster_service(graph: StackGraph, resource: Resource, rules: Rules) -> bool:
    """A Helm release of a cluster-wide service (operator, device plugin) on a cluster the stack does not create."""
    if resource.type != HELM_RELEASE or graph.kubernetes_cluster_in_stack(resource):
        return False
    charts = [entry["chart"] for entry in [*rules.operators.values(), *rules.extended_resources.values()]]
    return any(chart in str(resource.inputs.get("chart", "")) for chart in charts)


def destroy_findings(graph: StackGraph, rows: list[DestroyRow], rules: Rules) -> list[Finding]:
    findings = []
    by_key = {row.resource.key: row for row in rows}
    for row in rows:
        resource = row.resource
        if resource.retain_on_delete and row.outcome == DELETED:
            taken = row.how.split("yet ")[-1]
            findings.append(Finding(DESTROY, resource.name, f"retainOnDelete does not keep it: {taken}", False))
        if row.outcome == FAILS:
            fails_if = rules.aws_deletion[resource.type]["fails_if"]
            findings.append(Finding(DESTROY, resource.name, f"{resource.type}: destroy fails if {fails_if}", False))
        if "window_field" in rules.aws_deletion.get(resource.type, {}) and row.outcome == DELETED:
            for data in _encrypted_by(graph, resource, by_key):
                if data.outcome != DELETED:
                    why = (
                        f"destroy schedules this KMS key for deletion while {data.resource.name} ({data.outcome}) "
                        f"keeps data encrypted with it: retain the key as long as that data"
                    )
                    findings.append(Finding(DESTROY, resource.name, why, False))
        if row.outcome == REFUSED:
            held = [r.resource.name for r in rows if r.how == f"protected {resource.name} depends on it"]
            if held:
                why = (
                    f"protected: destroy fails here and keeps the {len(held)} resources it depends on "
                    f"({', '.join(held[:4])}{', ...' if len(held) > 4 else ''})"
                )
                findings.append(Finding(DESTROY, resource.name, why, False))
        if row.outcome == DELETED and _cluster_service(graph, resource, rules):
            why = (
                f"{resource.object_name} serves the whole cluster, which this stack does not create: destroy "
                f"removes it for every user of the cluster"
            )
            findings.append(Finding(DESTROY, resource.name, why, False))
    return sorted(set(findings))
