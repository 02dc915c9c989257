"""Dynamo custom resources as the pods the operator makes of them, in every served API version.

- `nvidia.com/v1beta1` (and later versions of the same shape) DynamoGraphDeployment: `spec.components[]`, each
  with a `type` and a full `podTemplate`; `spec.env` reaches every component's `main` container.
- `nvidia.com/v1alpha1` DynamoGraphDeployment: `spec.services{name: service}`; a service's pod is its
  `extraPodSpec` with `mainContainer` as the `main` container, which also gets the service's `resources`
  (`gpu`, `gpuType`, `custom` extended resources), `envs` (over the graph's `spec.envs`), `envFromSecret`,
  and its `volumeMounts` of the graph's `pvcs`; a `frontendSidecar` is one more container.
  `subComponentType` (prefill/decode) refines `componentType`.
- `nvidia.com/v1alpha1` DynamoComponentDeployment: one service in `spec`.

`compilation_caches` reads each component's compilation cache: v1beta1 `compilationCache` (`pvcName`,
`mountPath`), v1alpha1 the `volumeMounts` entry with `useAsCompilationCache: true` (`name`, `mountPoint`).

The shape, not the version string, decides how an object is read, so a future version of either shape is
read too.
"""

from __future__ import annotations

import copy
from typing import Any, Optional

from .kinds import KubeObject
from .names import GPU
from .values import UNKNOWN, as_dict, as_list, dig, text
from .workloads import DISAGGREGATED_TYPES, PodSpec

GROUP = "nvidia.com"
GRAPH_KIND = "DynamoGraphDeployment"
COMPONENT_KIND = "DynamoComponentDeployment"
MAIN = "main"


def _merge_env(*layers: Any) -> Any:
    """Env lists merged by name, later layers winning; `UNKNOWN` if a layer is unknown."""
    merged: dict[Any, Any] = {}
    for layer in layers:
        if layer is UNKNOWN:
            return UNKNOWN
        for entry in as_list(layer):
            name = dig(entry, "name")
            merged[name if isinstance(name, str) else id(entry)] = entry
    return list(merged.values())


def _with_env(container: dict[str, Any], *graph_env: Any) -> dict[str, Any]:
    updated = dict(container)
    env = _merge_env(*graph_env, container.get("env"))
    if env:
        updated["env"] = env
    return updated


def _graph_pods(obj: KubeObject) -> list[PodSpec]:
    spec = dig(obj.body, "spec")
    graph_env = dig(spec, "env")
    pods = []
    for index, component in enumerate(as_list(dig(spec, "components"))):
        name = text(dig(component, "name")) or f"#{index}"
        pod_spec = dig(component, "podTemplate", "spec")
        if isinstance(pod_spec, dict):
            pod_spec = dict(pod_spec)
            containers = dig(pod_spec, "containers")
            if isinstance(containers, list):
                pod_spec["containers"] = [
                    _with_env(c, graph_env) if isinstance(c, dict) and c.get("name") == MAIN else c for c in containers
                ]
        kind = dig(component, "type")
        pods.append(
            PodSpec(f"component {name}", pod_spec, kind if isinstance(kind, str) else None, name, obj.namespace)
        )
    return pods


def _resources(service: Any, main: dict[str, Any]) -> Any:
    """The main container's resources with the service's `resources` (v1alpha1 shape) laid over them."""
    service_resources = dig(service, "resources")
    if service_resources is UNKNOWN:
        return UNKNOWN
    merged = copy.deepcopy(as_dict(main.get("resources")))
    for section in ("requests", "limits"):
        given = dig(service_resources, section)
        if given is UNKNOWN:
            merged[section] = UNKNOWN
            continue
        if not isinstance(given, dict):
            continue
        target = merged.setdefault(section, {})
        for key in ("cpu", "memory"):
            if key in given:
                target[key] = given[key]
        if "gpu" in given:
            target[text(given.get("gpuType")) or GPU] = given["gpu"]
        target.update(as_dict(given.get("custom")))
    return merged


def _service_pod(service: Any, name: str, graph: Any, namespace: Any) -> PodSpec:
    extra = dig(service, "extraPodSpec")
    if extra is UNKNOWN:
        return PodSpec(f"service {name}", UNKNOWN, _service_type(service), name, namespace)
    pod_spec = {k: v for k, v in as_dict(extra).items() if k != "mainContainer"}
    main = dict(as_dict(dig(extra, "mainContainer")))
    main.setdefault("name", MAIN)
    main = _with_env(main, dig(graph, "envs"), dig(service, "envs"))
    main["resources"] = _resources(service, main)
    secret = text(dig(service, "envFromSecret"))
    if secret:
        main["envFrom"] = [*as_list(main.get("envFrom")), {"secretRef": {"name": secret}}]
    claims = {text(dig(p, "name")) for p in as_list(dig(graph, "pvcs"))} - {None}
    mounts = [m for m in as_list(dig(service, "volumeMounts")) if text(dig(m, "name"))]
    if mounts:
        main["volumeMounts"] = as_list(main.get("volumeMounts")) + [
            {"name": m["name"], "mountPath": dig(m, "mountPoint")} for m in mounts
        ]
        pod_spec["volumes"] = as_list(pod_spec.get("volumes")) + [
            {"name": m["name"], "persistentVolumeClaim": {"claimName": m["name"]}}
            for m in mounts
            if m["name"] in claims
        ]
    containers = [main] + [c for c in as_list(pod_spec.get("containers")) if isinstance(c, dict)]
    sidecar = dig(service, "frontendSidecar")
    if isinstance(sidecar, dict):
        containers.append(
            {
                "name": "frontend-sidecar",
                "image": sidecar.get("image"),
                "args": sidecar.get("args"),
                "env": _merge_env(dig(graph, "envs"), sidecar.get("envs")),
                **(
                    {"envFrom": [{"secretRef": {"name": sidecar["envFromSecret"]}}]}
                    if text(sidecar.get("envFromSecret"))
                    else {}
                ),
            }
        )
    pod_spec["containers"] = containers
    return PodSpec(f"service {name}", pod_spec, _service_type(service), name, namespace)


def _service_type(service: Any) -> Optional[str]:
    sub, kind = dig(service, "subComponentType"), dig(service, "componentType")
    if isinstance(sub, str) and sub in DISAGGREGATED_TYPES:
        return sub
    return kind if isinstance(kind, str) else None


def dynamo_pods(obj: KubeObject) -> Optional[list[PodSpec]]:
    """The pods of a Dynamo custom resource, or None if `obj` is not one."""
    if obj.group != GROUP or obj.kind not in (GRAPH_KIND, COMPONENT_KIND):
        return None
    spec = dig(obj.body, "spec")
    if obj.kind == COMPONENT_KIND:
        name = text(dig(spec, "serviceName")) or text(obj.name) or "?"
        return [_service_pod(spec, name, {}, obj.namespace)]
    if isinstance(dig(spec, "services"), dict):
        services = dig(spec, "services")
        return [_service_pod(service, str(name), spec, obj.namespace) for name, service in services.items()]
    return _graph_pods(obj)


def _cache_of(component: Any) -> Any:
    """(claim, mount path or None) of a component's compilation cache, None without one, or `UNKNOWN`."""
    cache = dig(component, "compilationCache")
    if cache is UNKNOWN:
        return UNKNOWN
    if isinstance(cache, dict) and text(cache.get("pvcName")):
        return text(cache.get("pvcName")), text(cache.get("mountPath"))
    mounts = dig(component, "volumeMounts")
    if mounts is UNKNOWN:
        return UNKNOWN
    flagged = [m for m in as_list(mounts) if isinstance(m, dict) and m.get("useAsCompilationCache") is True]
    if flagged and text(flagged[0].get("name")):
        return text(flagged[0].get("name")), text(flagged[0].get("mountPoint"))
    return None


def compilation_caches(obj: KubeObject) -> dict[str, Any]:
    """Component name (as `dynamo_pods` names it) -> `_cache_of` that component, for a Dynamo object."""
    spec = dig(obj.body, "spec")
    if obj.kind == COMPONENT_KIND:
        return {text(dig(spec, "serviceName")) or text(obj.name) or "?": _cache_of(spec)}
    services = dig(spec, "services")
    if isinstance(services, dict):
        return {str(name): _cache_of(service) for name, service in services.items()}
    return {
        text(dig(component, "name")) or f"#{index}": _cache_of(component)
        for index, component in enumerate(as_list(dig(spec, "components")))
    }
