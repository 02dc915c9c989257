"""Fake nodes shaped like a rendered stack's GPU pools, for kwok to run.

A shape comes from what the stack's workers ask of a node (the required node affinity, the tolerations and
the extended resources of each DGD worker and prewarm DaemonSet in the render) and from the instance facts
(`catalog/instance_types.yaml`, `catalog/gpus.yaml`) of the GPU that affinity names: instance-type, GPU
product and EFA labels, `nvidia.com/gpu` and `vpc.amazonaws.com/efa` capacity, the GPU taint. One untainted
CPU node carries everything else (frontends, Jobs, the gateway).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Optional

from serving_stack.facts import load_facts
from serving_stack.names import GPU_PRODUCT_LABEL

JSON = dict[str, Any]
GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}


@dataclass(frozen=True)
class NodeShape:
    labels: tuple[tuple[str, str], ...]
    taints: tuple[tuple[str, str, str], ...]
    instance_type: str
    gpus: int
    efa: int
    cpu: int
    memory_gib: int
    arch: str
    gpus_wanted: int = field(default=0, compare=False)

    @property
    def key(self) -> str:
        product = dict(self.labels).get(GPU_PRODUCT_LABEL, "gpu")
        return f"{self.instance_type}-{product}".replace(".", "-").lower()[:40]


def _pod_specs(objects: Iterable[JSON]) -> Iterable[tuple[JSON, int]]:
    """(pod spec, how many pods) of each GPU workload in the render."""
    for obj in objects:
        if obj.get("kind") == "DynamoGraphDeployment":
            for component in obj["spec"].get("components") or []:
                spec = (component.get("podTemplate") or {}).get("spec") or {}
                yield (
                    spec,
                    int(component.get("replicas", 1)) * int((component.get("multinode") or {}).get("nodeCount", 1)),
                )
        elif obj.get("kind") == "DaemonSet":
            yield obj["spec"]["template"]["spec"], 0


def _affinity_labels(spec: JSON) -> dict[str, str]:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    labels = dict(spec.get("nodeSelector") or {})
    for term in (required.get("nodeSelectorTerms") or [])[:1]:
        for expression in term.get("matchExpressions") or []:
            if expression.get("operator") == "In" and expression.get("values"):
                labels[expression["key"]] = expression["values"][0]
    return labels


def _gpus_requested(spec: JSON) -> int:
    return sum(
        int(str(((c.get("resources") or {}).get("limits") or {}).get(GPU, 0))) for c in spec.get("containers") or []
    )


def node_shapes(objects: list[JSON], gpus_per_node: Optional[int] = None) -> list[NodeShape]:
    """The GPU node shapes a render's workloads need; `gpus_per_node` overrides the instance's count."""
    facts = load_facts().aws
    by_product = {label: name for name, gpu in facts.gpus.items() for label in gpu.product_labels}
    shapes: dict[tuple[Any, ...], NodeShape] = {}
    for spec, pods in _pod_specs(objects):
        labels = _affinity_labels(spec)
        gpu = by_product.get(labels.get(GPU_PRODUCT_LABEL, ""))
        if gpu is None:
            continue
        candidates = [(name, t) for name, t in facts.instance_types.items() if t.gpu == gpu]
        wanted_type = labels.get("node.kubernetes.io/instance-type")
        name, instance = next(
            ((n, t) for n, t in candidates if n == wanted_type), max(candidates, key=lambda c: (c[1].gpus, c[0]))
        )
        labels.setdefault("node.kubernetes.io/instance-type", name)
        if instance.efaInterfaces:
            labels.setdefault("vpc.amazonaws.com/efa.present", "true")
        taints = tuple(
            sorted(
                (t["key"], t.get("value", "true"), t["effect"])
                for t in spec.get("tolerations") or []
                if t.get("effect") == "NoSchedule" and t.get("key")
            )
        )
        shape = NodeShape(
            labels=tuple(sorted(labels.items())),
            taints=taints,
            instance_type=name,
            gpus=gpus_per_node or instance.gpus,
            efa=instance.efaInterfaces,
            cpu=instance.vcpus,
            memory_gib=instance.memoryGiB,
            arch=instance.arch,
        )
        key = (shape.labels, shape.taints)
        previous = shapes.get(key)
        wanted = (previous.gpus_wanted if previous else 0) + pods * _gpus_requested(spec)
        shapes[key] = NodeShape(**{**shape.__dict__, "gpus_wanted": wanted})
    return list(shapes.values())


def node_objects(shapes: list[NodeShape], nodes_per_shape: Optional[int] = None) -> list[JSON]:
    """Node objects for kwok: enough of each shape for the GPUs its workloads request (at least one), or
    exactly `nodes_per_shape`; plus one untainted CPU node."""
    nodes = [_node("cpu-0", {"node.kubernetes.io/instance-type": "m7i.2xlarge"}, (), 8, 32, 0, 0, "amd64")]
    for number, shape in enumerate(shapes):
        count = nodes_per_shape or max(1, math.ceil(shape.gpus_wanted / shape.gpus))
        for index in range(count):
            nodes.append(
                _node(
                    f"{shape.key}-s{number}-{index}",
                    dict(shape.labels),
                    shape.taints,
                    shape.cpu,
                    shape.memory_gib,
                    shape.gpus,
                    shape.efa,
                    "arm64" if shape.arch == "arm64" else "amd64",
                )
            )
    return nodes


def _node(
    name: str,
    labels: dict[str, str],
    taints: Iterable[tuple[str, str, str]],
    cpu: int,
    memory_gib: int,
    gpus: int,
    efa: int,
    arch: str,
) -> JSON:
    capacity = {"cpu": str(cpu), "memory": f"{memory_gib}Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    if gpus:
        capacity[GPU] = str(gpus)
    if efa:
        capacity[EFA] = str(efa)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": dict(KWOK_ANNOTATION),
            "labels": {
                **labels,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": arch,
                "type": "kwok",
            },
        },
        "spec": {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]},
        "status": {"capacity": capacity, "allocatable": capacity},
    }
