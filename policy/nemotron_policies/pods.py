"""Every pod spec a resource declares, found by what the resource is (`kinds.kubernetes_objects`).

Built-in workloads are read at their documented template path, in every API group and version that serves
the kind; Dynamo resources through `dynamo.dynamo_pods`; any other object (a custom resource the pack does
not know: LeaderWorkerSet, Grove, Argo) is searched for pod-spec-shaped mappings (a `containers` list of
containers), so no custom resource hides a container from the rules. `loose_container_pods` adds, for the
privilege and Pod Security rules, what such resources hold outside a pod spec: single containers (Argo
`container`/`script`, Tekton `steps`/`sidecars`) and pod-level settings of the resource's spec (an Argo
Workflow's `hostNetwork`, `securityContext`, `volumes`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .dynamo import dynamo_pods
from .kinds import KubeObject, kubernetes_objects
from .values import UNKNOWN, as_dict, as_list, dig
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
# Where workflow and pipeline resources keep containers outside a `containers` list (Argo templates' `container`
# and `script`, Tekton `steps` and `sidecars`), and the pod-level settings their spec may carry for every pod.
SINGLE_CONTAINER_KEYS = ("container", "script")
CONTAINER_LIST_KEYS = ("steps", "sidecars", "initContainers")
POD_LEVEL_KEYS = ("hostNetwork", "hostPID", "hostIPC", "securityContext", "volumes", "hostUsers")


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


def _is_container(value: Any) -> bool:
    return isinstance(value, dict) and "image" in value


def _loose_containers(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, list[Any]]]:
    """(path, containers) of mappings that hold containers outside a `containers` list."""
    if depth > SEARCH_DEPTH or not isinstance(value, (dict, list)):
        return
    if isinstance(value, dict):
        if isinstance(value.get("containers"), list):
            return  # a pod spec: `pod_specs` reads it
        found = [value[k] for k in SINGLE_CONTAINER_KEYS if _is_container(value.get(k))]
        found += [c for k in CONTAINER_LIST_KEYS for c in as_list(value.get(k)) if _is_container(c)]
        if found:
            yield path or "spec", found
        for key, child in value.items():
            if key not in SINGLE_CONTAINER_KEYS:
                yield from _loose_containers(child, f"{path}.{key}" if path else str(key), depth + 1)
    for index, child in enumerate(as_list(value)):
        yield from _loose_containers(child, f"{path}[{index}]", depth + 1)


def loose_container_pods(resource_type: str, props: Any) -> list[PodSpec]:
    """Pods made of what a custom resource the pack has no reader for holds outside pod specs: its loose
    containers, and the pod-level settings of its spec."""
    pods = []
    for obj in kubernetes_objects(resource_type, props):
        if not is_searched(obj):
            continue
        prefix = f"{obj.kind} {obj.name or '?'}{f' ({obj.where})' if obj.where else ''}"
        spec = dig(obj.body, "spec")
        for path, found in _loose_containers(spec, ""):
            pods.append(PodSpec(f"{prefix} containers at spec.{path}", {"containers": found}, namespace=obj.namespace))
        pod_level = {k: v for k, v in as_dict(spec).items() if k in POD_LEVEL_KEYS}
        if pod_level and not isinstance(dig(spec, "containers"), list):
            pods.append(PodSpec(f"{prefix} spec (pod-level settings)", pod_level, namespace=obj.namespace))
    return pods


def pod_specs(resource_type: str, props: Any) -> list[PodSpec]:
    """The pod specs of a resource (none for resources that declare no pods)."""
    return [pod for obj in kubernetes_objects(resource_type, props) for pod in object_pods(obj)]
