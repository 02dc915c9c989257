"""The NVIDIA DRA driver is a pinned Helm release with ComputeDomains on and GPU allocation off (the EKS
UltraServer guide's values): its controller runs on the system nodes, its kubelet plugin only on the pools
that need ComputeDomains, tolerating the GPU taint. The plan installs it exactly for such pools."""

from __future__ import annotations

import pytest
from aws_helpers import capacity_fields, eks_config, node_pool, run_components, the
from plan_helpers import plan_of

from components.dra_driver import NvidiaDraDriver
from serving_stack.facts.aws import load_aws_catalog
from serving_stack.names import GPU_TAINT, POOL_LABEL
from serving_stack.plan.cluster import DraDriverPlan

CATALOG = load_aws_catalog()
NEEDS_DRA = sorted(name for name, i in CATALOG.instance_types.items() if i.computeDomains)
NO_DRA = sorted(name for name, i in CATALOG.instance_types.items() if not i.computeDomains)


def release_values(pools: list[str]) -> dict:
    chart = CATALOG.platform.draDriver
    run = run_components(lambda: NvidiaDraDriver("dra", DraDriverPlan(chart, tuple(pools))) and None)
    release = the(run, "kubernetes:helm.sh/v3:Release")
    assert (release["chart"], release["version"], release["namespace"]) == (chart.chart, chart.version, chart.namespace)
    assert release["repositoryOpts"] == {"repo": chart.repository}
    assert the(run, "kubernetes:core/v1:Namespace")["metadata"]["name"] == chart.namespace
    assert run.named("dra-release").to_json()["deleteBeforeReplace"] is True  # fixed-name DeviceClasses
    return release["values"]


def terms(component: dict) -> list:
    return component["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def test_compute_domains_on_gpus_off_kubelet_plugin_on_the_pools_only():
    values = release_values(["gb200-b", "gb200-a"])
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    # EKS has no control-plane nodes: the chart's control-plane affinity and toleration are replaced.
    (controller,) = terms(values["controller"])
    assert controller == {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}
    assert values["controller"]["tolerations"] == []
    (term,) = terms(values["kubeletPlugin"])
    assert term["matchExpressions"] == [
        {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
        {"key": POOL_LABEL, "operator": "In", "values": ["gb200-a", "gb200-b"]},
    ]
    assert values["kubeletPlugin"]["tolerations"] == [
        {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}
    ]


@pytest.mark.parametrize("instance_type", NEEDS_DRA)
def test_planned_for_pools_whose_type_needs_compute_domains(instance_type):
    others = [node_pool(f"other-{i}", name, **capacity_fields(name)) for i, name in enumerate(NO_DRA)]
    raw = eks_config([node_pool("nvl", instance_type, **capacity_fields(instance_type)), *others], [])
    dra = plan_of(raw).device_plugins.dra_driver
    assert (dra.pools, dra.chart) == (("nvl",), CATALOG.platform.draDriver)
    off = eks_config(raw["aws"]["nodePools"], [], devicePlugins={"draDriver": False})
    assert plan_of(off).device_plugins.dra_driver is None


def test_not_planned_without_such_pools():
    raw = eks_config([node_pool(f"p{i}", name, **capacity_fields(name)) for i, name in enumerate(NO_DRA)], [])
    assert plan_of(raw).device_plugins.dra_driver is None
