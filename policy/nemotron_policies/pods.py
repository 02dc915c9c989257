"""Every pod spec a resource declares, found by what the resource is (`kinds.kubernetes_objects`).

Built-in workloads are read at their documented template path, in every API group and version that serves
the kind; Dynamo resources through `dynamo.dynamo_pods`; any other object (a custom resource the pack does
not know: LeaderWorkerSet, Grove, Argo) is searched for pod-spec-shaped mappings (a `containers` list of
containers), so no custom resource hides a container from the rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .dynamo import dynamo_pods
from .kinds import KubeObject, kubernetes_objects
from .values import UNKNOWN, as_list, dig
from .workloads import PodSpec

CORE, APPS, BATCH = frozenset({""}), frozenset({"apps", "extensions"}), frozenset({"batch"})
TEMPLATE = ("spec", "template", "spec")
POD_SPEC_PATHS: dict[str, tuple[frozenset[str], tuple[str, ...], str]] = {
    "Pod": (CORE, ("spec",), "pod"),
    "PodTemplate": (CORE, ("template", "spec"), "pod template"),
    "ReplicationController": (CORE, TEMPLATE, "pod template"),
    "Deployment": (APPS, TEMPLATE, "pod template"),
    "StatefulSet": (APPS, TEMPLATE, "pod template"),
    "DaemonSet": (APPS, TEMPLATE, "pod template"),
    "ReplicaSet": (APPS, TEMPLATE, "pod template"),
    "Job": (BATCH, TEMPLATE, "pod template"),
    "CronJob": (BATCH, ("spec", "jobTemplate", "spec", "template", "spec"), "pod template"),
}
# Objects that never hold a pod spec: skip the search.
PLAIN_DATA_KINDS = frozenset(
    {
        "ConfigMap",
        "Secret",
        "Namespace",
        "Service",
        "ServiceAccount",
        "PersistentVolumeClaim",
        "StorageClass",
        "PriorityClass",
        "CustomResourceDefinition",
    }
)
PLAIN_DATA_GROUPS = frozenset({"", "storage.k8s.io", "scheduling.k8s.io", "apiextensions.k8s.io"})
SEARCH_DEPTH = 64  # deep enough for any real nesting, bounded against pathological inputs


def is_workload_kind(obj: KubeObject, *kinds: str) -> bool:
    """Is `obj` one of these built-in workload kinds (in a group that serves it)?"""
    return obj.kind in kinds and obj.kind in POD_SPEC_PATHS and obj.group in POD_SPEC_PATHS[obj.kind][0]


def _shaped_like_pod_specs(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > SEARCH_DEPTH or value is UNKNOWN:
        return
    if isinstance(value, dict):
        listed = value.get("containers")
        if isinstance(listed, list) and any(isinstance(c, dict) and ("image" in c or "name" in c) for c in listed):
            yield path or "spec", value
            return
        for key, child in value.items():
            yield from _shaped_like_pod_specs(child, f"{path}.{key}" if path else str(key), depth + 1)
    for index, child in enumerate(as_list(value)):
        yield from _shaped_like_pod_specs(child, f"{path}[{index}]", depth + 1)


def is_searched(obj: KubeObject) -> bool:
    """Is `obj` a custom resource the pack has no reader for (its pod specs are found by their shape)?"""
    if dynamo_pods(obj) is not None or (obj.kind in POD_SPEC_PATHS and obj.group in POD_SPEC_PATHS[obj.kind][0]):
        return False
    return not (obj.kind in PLAIN_DATA_KINDS and obj.group in PLAIN_DATA_GROUPS)


def object_pods(obj: KubeObject) -> list[PodSpec]:
    prefix = f"{obj.kind} {obj.name or '?'} ({obj.where}) " if obj.where else ""
    pods = dynamo_pods(obj)
    if pods is None and obj.kind in POD_SPEC_PATHS and obj.group in POD_SPEC_PATHS[obj.kind][0]:
        _, path, owner = POD_SPEC_PATHS[obj.kind]
        pods = [PodSpec(owner, dig(obj.body, *path), namespace=obj.namespace)]
    if pods is None:
        if obj.kind in PLAIN_DATA_KINDS and obj.group in PLAIN_DATA_GROUPS:
            return []
        body = dig(obj.body, "spec")
        pods = [
            PodSpec(f"pod spec at spec.{path}" if path != "spec" else "pod spec", spec, namespace=obj.namespace)
            for path, spec in _shaped_like_pod_specs(body, "")
        ]
    if not prefix:
        return pods
    return [
        PodSpec(prefix + pod.owner, pod.spec, pod.component_type, pod.component_name, pod.namespace) for pod in pods
    ]


def pod_specs(resource_type: str, props: Any) -> list[PodSpec]:
    """The pod specs of a resource (none for resources that declare no pods)."""
    return [pod for obj in kubernetes_objects(resource_type, props) for pod in object_pods(obj)]
