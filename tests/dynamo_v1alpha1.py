"""A recorded v1beta1 DynamoGraphDeployment rewritten as the v1alpha1 object the operator turns into the same
pods: `spec.components[]` -> `spec.services{}`, the pod template -> `extraPodSpec` with `mainContainer`, the
main container's GPU and extended resources -> the service's `resources` (`gpu`, `custom`), prefill/decode ->
`componentType: worker` + `subComponentType`, `spec.env` -> `spec.envs`, `compilationCache` -> a `volumeMounts`
entry with `useAsCompilationCache`. Used to hold every served version
to the same verdicts."""

from __future__ import annotations

import copy
from typing import Any

from policy_helpers import retype

from tools.mock_runtime import RecordedResource

V1ALPHA1_DGD = "kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment"
GPU = "nvidia.com/gpu"


def _service_resources(resources: dict[str, Any]) -> dict[str, Any]:
    converted = {}
    for section in ("requests", "limits"):
        given, out, custom = resources.get(section, {}), {}, {}
        for key, value in given.items():
            if key in ("cpu", "memory"):
                out[key] = value
            elif key == GPU:
                out["gpu"] = str(value)
            else:
                custom[key] = str(value)
        if custom:
            out["custom"] = custom
        if out:
            converted[section] = out
    return converted


def _service(component: dict[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(component["podTemplate"]["spec"])
    containers = pod.pop("containers")
    main = next(c for c in containers if c["name"] == "main")
    others = [c for c in containers if c is not main]
    main = {k: v for k, v in main.items() if k not in ("name", "resources")}
    kind = component["type"]
    service: dict[str, Any] = {
        "componentType": "worker" if kind in ("prefill", "decode") else kind,
        "replicas": component.get("replicas", 1),
        "extraPodSpec": {**pod, "mainContainer": main, **({"containers": others} if others else {})},
    }
    if kind in ("prefill", "decode"):
        service["subComponentType"] = kind
    resources = _service_resources(next(c for c in containers if c["name"] == "main").get("resources", {}))
    if resources:
        service["resources"] = resources
    if "sharedMemorySize" in component:
        service["sharedMemory"] = {"size": component["sharedMemorySize"]}
    cache = component.get("compilationCache")
    if cache:  # the operator's own conversion (v1alpha1 convertVolumeMountsFromHub): one flagged mount
        service["volumeMounts"] = [
            {"name": cache["pvcName"], "mountPoint": cache.get("mountPath"), "useAsCompilationCache": True}
        ]
    return service


def to_v1alpha1(record: RecordedResource) -> None:
    dgd = record.inputs
    spec = {k: v for k, v in dgd["spec"].items() if k not in ("components", "env")}
    spec["services"] = {c["name"]: _service(c) for c in dgd["spec"]["components"]}
    if "env" in dgd["spec"]:
        spec["envs"] = dgd["spec"]["env"]
    record.inputs = {**dgd, "apiVersion": "nvidia.com/v1alpha1", "spec": spec}
    retype(record, V1ALPHA1_DGD)
