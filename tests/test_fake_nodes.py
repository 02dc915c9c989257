"""The e2e harness's fake nodes (tools/e2e/fake_nodes.py), without a cluster: built from the rendered node
groups and the device plugins the render installs, or from the declared node shapes, never from the pods."""

from __future__ import annotations

import copy

import pytest
from stack_helpers import rendered_stack, stack_file_config

from serving_stack.config import ConfigError, parse_stack_config
from serving_stack.facts import load_facts
from serving_stack.names import GPU_PRODUCT_LABEL
from tools.e2e.fake_nodes import (
    EFA,
    EFA_INTERFACE_TYPES,
    EKS_EFFECTS,
    GPU,
    NODE_GROUP,
    RELEASE,
    declared_gpu_nodes,
    eks_nodes,
    stack_nodes,
)


@pytest.fixture(scope="module")
def prod() -> list[dict]:
    return [r.to_json() for r in rendered_stack("prod").resources]


def _groups(records: list[dict]) -> list[dict]:
    return [r for r in records if r["type"] == NODE_GROUP]


def _of_group(nodes: list[dict], group: dict) -> list[dict]:
    prefix = group["inputs"]["nodeGroupNamePrefix"]
    return [n for n in nodes if n["metadata"]["labels"]["eks.amazonaws.com/nodegroup"].startswith(prefix)]


def test_one_node_per_desired_node_of_each_rendered_node_group(prod):
    nodes, records = stack_nodes(prod), {f"{r['type']}::{r['name']}": r for r in prod}
    aws = load_facts().aws
    assert _groups(prod) and len(nodes) == sum(g["inputs"]["scalingConfig"]["desiredSize"] for g in _groups(prod))
    for group in _groups(prod):
        inputs = group["inputs"]
        mine = _of_group(nodes, group)
        assert len(mine) == inputs["scalingConfig"]["desiredSize"]
        zones = {records[s]["inputs"]["availabilityZone"] for s in group["propertyDependencies"]["subnetIds"]}
        template = records[group["propertyDependencies"]["launchTemplate"][0]]["inputs"]
        efa = sum(1 for nic in template.get("networkInterfaces") or [] if nic["interfaceType"] in EFA_INTERFACE_TYPES)
        instance = aws.instance_types.get(inputs["instanceTypes"][0])
        for node in mine:
            labels, capacity = node["metadata"]["labels"], node["status"]["capacity"]
            assert inputs["labels"].items() <= labels.items()
            assert labels["node.kubernetes.io/instance-type"] == inputs["instanceTypes"][0]
            assert labels["eks.amazonaws.com/capacityType"] == inputs.get("capacityType", "ON_DEMAND")
            assert labels["topology.kubernetes.io/zone"] in zones
            assert node["spec"]["taints"] == [
                {"key": t["key"], "value": t["value"], "effect": EKS_EFFECTS[t["effect"]]}
                for t in inputs.get("taints") or []
            ]
            if instance is None:  # a CPU group
                assert GPU not in capacity and EFA not in capacity
                continue
            assert capacity[GPU] == str(instance.gpus)
            assert labels[GPU_PRODUCT_LABEL] == aws.gpus[instance.gpu].productLabel
            assert capacity.get(EFA, "0") == str(efa) and efa > 0


def test_a_taint_without_value_and_every_eks_effect_are_applied_as_eks_applies_them(prod):
    records = copy.deepcopy(prod)
    group = next(g for g in _groups(records) if g["inputs"].get("taints"))
    group["inputs"]["taints"] = [{"key": f"k{i}", "effect": effect} for i, effect in enumerate(EKS_EFFECTS)]
    (node, *_) = _of_group(stack_nodes(records), group)
    assert node["spec"]["taints"] == [{"key": f"k{i}", "effect": e} for i, e in enumerate(EKS_EFFECTS.values())]
    # A NoSchedule taint the NVIDIA device plugin does not tolerate: the plugin never runs there, no GPUs.
    assert GPU not in node["status"]["capacity"]


def test_only_the_device_plugins_the_render_installs_advertise_resources(prod):
    platform = load_facts().aws.platform.devicePlugins
    without = [r for r in prod if not (r["type"] == RELEASE and r["inputs"]["chart"] == platform.efa.chart)]
    assert len(without) < len(prod)
    assert not any(EFA in n["status"]["capacity"] for n in stack_nodes(without))
    without = [r for r in prod if not (r["type"] == RELEASE and r["inputs"]["chart"] == platform.nvidia.chart)]
    nodes = stack_nodes(without)
    assert not any(GPU in n["status"]["capacity"] or GPU_PRODUCT_LABEL in n["metadata"]["labels"] for n in nodes)


def test_the_pods_decide_nothing_about_the_nodes(prod):
    """A toleration, an affinity and a request planted in every workload leave the nodes as they were."""
    records = copy.deepcopy(prod)
    for record in records:
        spec = ((record["inputs"].get("spec") or {}).get("template") or {}).get("spec")
        specs = [spec] if spec else []
        specs += [
            (c.get("podTemplate") or {}).get("spec") or {}
            for c in (record["inputs"].get("spec") or {}).get("components") or []
        ]
        for pod in specs:
            pod["tolerations"] = [{"key": "planted", "operator": "Equal", "value": "x", "effect": "NoSchedule"}]
            pod["nodeSelector"] = {"planted": "x"}
            for container in pod.get("containers") or []:
                container.setdefault("resources", {}).setdefault("limits", {})["planted/resource"] = "1"
    assert stack_nodes(records) == stack_nodes(prod)


def test_an_existing_cluster_gets_the_declared_nodes_or_the_eks_gpu_node_fixture():
    dev = [r.to_json() for r in rendered_stack("dev").resources]
    assert not _groups(dev)
    fixture = eks_nodes()
    nodes = stack_nodes(dev, declared_gpu_nodes(stack_file_config("dev")))
    gpu_nodes = [n for n in nodes if GPU in n["status"]["capacity"]]
    assert len(gpu_nodes) == sum(s.count for s in fixture.gpuNodes)
    assert len(nodes) == len(gpu_nodes) + sum(s.count for s in fixture.systemNodes)
    shape = fixture.gpuNodes[0]
    assert gpu_nodes[0]["status"]["capacity"][GPU] == str(shape.resources[GPU])
    assert shape.labels.items() <= gpu_nodes[0]["metadata"]["labels"].items()

    declared = {"labels": {"node.kubernetes.io/instance-type": "p5.4xlarge"}, "count": 3, "resources": {GPU: 1}}
    declared["taints"] = [{"key": GPU, "effect": "NoSchedule"}]
    config = {"kubernetes": {"gpuNodes": [declared]}}
    nodes = [n for n in stack_nodes(dev, declared_gpu_nodes(config)) if GPU in n["status"]["capacity"]]
    assert len(nodes) == 3 and all(n["spec"]["taints"] == [{"key": GPU, "effect": "NoSchedule"}] for n in nodes)


def test_a_declared_taint_in_the_eks_api_spelling_is_refused_naming_the_key():
    config = copy.deepcopy(stack_file_config("dev"))
    config["kubernetes"]["gpuNodes"] = [{"resources": {GPU: 1}, "taints": [{"key": GPU, "effect": "NO_SCHEDULE"}]}]
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(config)
    assert "kubernetes.gpuNodes[0].taints[0].effect" in str(refused.value)
