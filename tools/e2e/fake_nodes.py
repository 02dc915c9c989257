"""Fake nodes for kwok, built from what makes a cluster's nodes, never from the pods that run on them.

A stack that builds its pools: one node per desired node of each rendered `aws:eks/nodeGroup:NodeGroup`,
as EKS makes it. Labels: the node group's own `labels`, those EKS adds to managed nodes
(`eks.amazonaws.com/nodegroup`, `/capacityType`), the instance type, the zone of the node group's subnet and
the architecture, `nvidia.com/gpu.present` on an NVIDIA AMI type (nodeadm), GPU Feature Discovery's product
label where the rendered NVIDIA device plugin runs it. Taints: the node group's `taints` as EKS applies them,
its effect names mapped to Kubernetes' (the EKS API's `TaintEffect`, botocore data/eks/2017-11-01: NO_SCHEDULE,
NO_EXECUTE, PREFER_NO_SCHEDULE). Capacity: CPU and memory from the instance facts (catalog/instance_types.yaml,
catalog/eks_nodes.yaml), and extended resources only from a device plugin the render installs and that would
run on the node (its node selector and tolerations): `nvidia.com/gpu` (one per GPU), `vpc.amazonaws.com/efa`
(one per EFA interface of the node group's launch template), `rdma/ib` (the RDMA shared device plugin's
`rdmaHcaMax`).

A stack on an existing cluster: the nodes its config declares (`kubernetes.gpuNodes`, defaulting to
catalog/eks_nodes.yaml's EKS GPU node) plus that file's system nodes.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any, Optional

import pydantic

from serving_stack.config.serving import GpuNodeShape
from serving_stack.facts import load_facts
from serving_stack.facts.aws import InstanceType
from serving_stack.facts.strict_files import DATA_DIR, Data, load_model
from serving_stack.names import GPU_PRODUCT_LABEL, INFINIBAND_RESOURCE, INSTANCE_TYPE_LABEL

JSON = dict[str, Any]
GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
EFA_INTERFACE_TYPES = ("efa", "efa-only")  # EC2 interface types that carry an EFA device
ARCH = {"x86_64": "amd64", "arm64": "arm64"}


class CpuInstance(Data):
    vcpus: int = pydantic.Field(gt=0)
    memoryGiB: int = pydantic.Field(gt=0)
    arch: str
    source: str


class EksNodes(Data):
    schemaVersion: int
    read: datetime.date
    gpuNodes: list[GpuNodeShape]
    systemNodes: list[GpuNodeShape]
    instanceTypes: dict[str, CpuInstance]


@cache
def eks_nodes() -> EksNodes:
    return load_model(DATA_DIR / "eks_nodes.yaml", EksNodes)


def _release(records: Iterable[JSON], chart: str) -> Optional[JSON]:
    return next((r["inputs"] for r in records if r["type"] == RELEASE and r["inputs"].get("chart") == chart), None)


def _tolerated(tolerations: Sequence[Mapping[str, Any]], taints: Sequence[Mapping[str, str]]) -> bool:
    """Whether a pod with these tolerations may run on a node with these taints (NoSchedule, NoExecute)."""

    def matches(toleration: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
        if toleration.get("effect") and toleration["effect"] != taint["effect"]:
            return False
        if toleration.get("operator") == "Exists":
            return not toleration.get("key") or toleration["key"] == taint["key"]
        return toleration.get("key") == taint["key"] and toleration.get("value", "") == taint.get("value", "")

    hard = [t for t in taints if t["effect"] in ("NoSchedule", "NoExecute")]
    return all(any(matches(toleration, taint) for toleration in tolerations) for taint in hard)


def _runs_on(spec: Mapping[str, Any], labels: Mapping[str, str], taints: Sequence[Mapping[str, str]]) -> bool:
    """Whether a pod with this spec (its nodeSelector and tolerations) may run on such a node."""
    selected = all(labels.get(k) == v for k, v in (spec.get("nodeSelector") or {}).items())
    return selected and _tolerated(spec.get("tolerations") or [], taints)


def _plugins(
    records: list[JSON], labels: Mapping[str, str], taints: list[dict[str, str]], gpus: int, efa: int
) -> dict[str, int]:
    """The extended resources the render's device plugins would advertise on such a node."""
    platform = load_facts().aws.platform.devicePlugins
    resources: dict[str, int] = {}
    nvidia = _release(records, platform.nvidia.chart)
    tolerations = ((nvidia or {}).get("values") or {}).get("tolerations") or []
    gpu_present = labels.get("nvidia.com/gpu.present") == "true"
    if nvidia is not None and gpus and gpu_present and _tolerated(tolerations, taints):
        resources[GPU] = gpus
    efa_plugin = _release(records, platform.efa.chart)
    values = (efa_plugin or {}).get("values") or {}
    allowed = (values.get("supportedInstanceLabels") or {}).get("values")
    on_type = allowed is None or labels.get(INSTANCE_TYPE_LABEL) in allowed
    if efa_plugin is not None and efa and on_type and _runs_on(values, labels, taints):
        resources[EFA] = efa
    rdma = next(
        (
            r["inputs"]["spec"]["template"]["spec"]
            for r in records
            if r["type"] == "kubernetes:apps/v1:DaemonSet" and r["inputs"]["metadata"]["name"] == "rdma-shared-dp-ds"
        ),
        None,
    )
    if rdma is not None and _runs_on(rdma, labels, taints):
        resources[INFINIBAND_RESOURCE] = platform.rdmaSharedDevice.rdmaHcaMax
    return resources


def node_group_nodes(records: list[JSON]) -> list[JSON]:
    """One node per desired node of each rendered managed node group, as EKS and the render's plugins make it."""
    facts = load_facts().aws
    by_name, nodes = {f"{r['type']}::{r['name']}": r for r in records}, []
    nvidia = _release(records, facts.platform.devicePlugins.nvidia.chart) or {}
    gfd = bool(((nvidia.get("values") or {}).get("gfd") or {}).get("enabled"))
    for group in (r for r in records if r["type"] == NODE_GROUP):
        inputs, deps = group["inputs"], group.get("propertyDependencies") or {}
        template = next((by_name.get(urn) for urn in deps.get("launchTemplate") or []), None)
        instance_type = (inputs.get("instanceTypes") or [None])[0] or (template or {}).get("inputs", {}).get(
            "instanceType"
        )
        gpu_type, shape = facts.instance_types.get(instance_type), _instance(instance_type, group["name"])
        zones = [
            by_name[urn]["inputs"].get("availabilityZone") for urn in deps.get("subnetIds") or [] if urn in by_name
        ]
        name = str(inputs.get("nodeGroupName") or inputs.get("nodeGroupNamePrefix", group["name"] + "-") + "e2e")
        labels = {
            **(inputs.get("labels") or {}),
            "eks.amazonaws.com/nodegroup": name,
            "eks.amazonaws.com/capacityType": inputs.get("capacityType") or "ON_DEMAND",  # EKS's default
            INSTANCE_TYPE_LABEL: instance_type,
            "kubernetes.io/arch": ARCH[shape.arch],
        }
        if "NVIDIA" in str(inputs.get("amiType", "")):
            labels["nvidia.com/gpu.present"] = "true"
        if gpu_type is not None and gfd:
            labels[GPU_PRODUCT_LABEL] = facts.gpus[gpu_type.gpu].productLabel
        taints = [_taint(t["key"], t.get("value"), EKS_EFFECTS[t["effect"]]) for t in inputs.get("taints") or []]
        interfaces = ((template or {}).get("inputs") or {}).get("networkInterfaces") or []
        efa = sum(1 for nic in interfaces if nic.get("interfaceType") in EFA_INTERFACE_TYPES)
        resources = _plugins(records, labels, taints, gpu_type.gpus if gpu_type else 0, efa)
        for index in range(int(inputs["scalingConfig"]["desiredSize"])):
            zone = {"topology.kubernetes.io/zone": zones[index % len(zones)]} if zones else {}
            nodes.append(_node(f"{name}-{index}", {**labels, **zone}, taints, shape.vcpus, shape.memoryGiB, resources))
    return nodes


def _instance(instance_type: Optional[str], what: str) -> InstanceType | CpuInstance:
    """A type's instance facts: catalog/instance_types.yaml's, else catalog/eks_nodes.yaml's (CPU types)."""
    found = load_facts().aws.instance_types.get(str(instance_type)) or eks_nodes().instanceTypes.get(str(instance_type))
    if found is None:
        raise ValueError(f"{what}: no instance facts for {instance_type!r} in catalog/")
    return found


def _taint(key: str, value: Optional[str], effect: str) -> dict[str, str]:
    return {"key": key, **({"value": value} if value else {}), "effect": effect}


def declared_nodes(gpu_nodes: Optional[Sequence[GpuNodeShape]]) -> list[JSON]:
    """An existing cluster's nodes: the declared GPU node shapes (or the EKS GPU node fixture) and the
    fixture's system nodes."""
    fixture, nodes = eks_nodes(), []
    for kind, shapes in (("gpu", gpu_nodes or fixture.gpuNodes), ("system", fixture.systemNodes)):
        for number, shape in enumerate(shapes):
            size = _instance(shape.labels.get(INSTANCE_TYPE_LABEL, ""), f"{kind} node {number}")
            taints, resources = [_taint(t.key, t.value, t.effect) for t in shape.taints], dict(shape.resources)
            for index in range(shape.count):
                name = f"{kind}-{number}-{index}"
                nodes.append(_node(name, dict(shape.labels), taints, size.vcpus, size.memoryGiB, resources))
    return nodes


def declared_gpu_nodes(config: Mapping[str, Any]) -> Optional[list[GpuNodeShape]]:
    """`kubernetes.gpuNodes` of a stack file's `config:` block (keys with or without the project prefix)."""
    kubernetes = next((v for k, v in config.items() if k.split(":")[-1] == "kubernetes"), None) or {}
    declared = kubernetes.get("gpuNodes")
    return None if declared is None else [GpuNodeShape.model_validate(shape) for shape in declared]


def stack_nodes(records: list[JSON], gpu_nodes: Optional[Sequence[GpuNodeShape]] = None) -> list[JSON]:
    """The cluster a render runs on: its node groups' nodes if it builds any, else the declared nodes."""
    if any(r["type"] == NODE_GROUP for r in records):
        return node_group_nodes(records)
    return declared_nodes(gpu_nodes)


def _node(
    name: str,
    labels: dict[str, str],
    taints: list[dict[str, str]],
    cpu: int,
    memory_gib: int,
    resources: Mapping[str, int],
) -> JSON:
    capacity = {
        "cpu": str(cpu),
        "memory": f"{memory_gib}Gi",
        "pods": "110",
        "ephemeral-storage": "1Ti",
        **{k: str(v) for k, v in resources.items()},
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": dict(KWOK_ANNOTATION),
            "labels": {"kubernetes.io/os": "linux", **labels, "kubernetes.io/hostname": name, "type": "kwok"},
        },
        "spec": {"taints": taints},
        "status": {"capacity": capacity, "allocatable": capacity},
    }
