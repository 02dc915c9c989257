"""Device plugins are pinned Helm releases (or the upstream manifests) whose values fit the GPU taint:
GFD on and MOFED off for the NVIDIA plugin, the EFA plugin only on EFA pools, the RDMA shared device
plugin only when a pool's fabric is InfiniBand, exposing `rdma/ib`."""

from __future__ import annotations

import json

from aws_helpers import inputs, run_components, the

from components.device_plugins import DevicePlugins
from serving_stack.facts.aws import load_aws_catalog
from serving_stack.plan.cluster import DevicePluginSet

RELEASE, DAEMON_SET, CONFIG_MAP = (
    "kubernetes:helm.sh/v3:Release",
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:core/v1:ConfigMap",
)
TOLERATES_GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def plugins(efa_instance_types=(), infiniband=False, nvidia=True):
    def build():
        DevicePlugins(
            "plugins",
            DevicePluginSet(
                pins=load_aws_catalog().platform.devicePlugins,
                nvidia=nvidia,
                efa=bool(efa_instance_types),
                efa_instance_types=tuple(efa_instance_types),
                infiniband=infiniband,
            ),
        )

    return run_components(build)


def releases(run) -> dict[str, dict]:
    return {r["chart"]: r for r in inputs(run, RELEASE)}


def test_nvidia_device_plugin_with_gfd_and_mofed_disabled():
    nvidia = releases(plugins())["nvidia-device-plugin"]
    assert nvidia["version"] == load_aws_catalog().platform.devicePlugins.nvidia.version
    assert nvidia["repositoryOpts"] == {"repo": "https://nvidia.github.io/k8s-device-plugin"}
    assert nvidia["namespace"] == "nvidia-device-plugin"
    values = nvidia["values"]
    assert values["gfd"] == {"enabled": True}
    assert values["mofedEnabled"] is False
    assert TOLERATES_GPU_TAINT in values["tolerations"]
    assert values["nfd"]["worker"]["tolerations"] == [TOLERATES_GPU_TAINT]


def test_efa_plugin_only_on_efa_pools_and_tolerating_the_gpu_taint():
    efa = releases(plugins(efa_instance_types=["p5en.48xlarge", "p6-b200.48xlarge", "p5en.48xlarge"]))[
        "aws-efa-k8s-device-plugin"
    ]
    pin = load_aws_catalog().platform.devicePlugins.efa
    assert (efa["version"], efa["namespace"]) == (pin.version, "kube-system")
    # The stack's pool types narrow the chart's own list; each is in it (else the DaemonSet never lands).
    assert set(efa["values"]["supportedInstanceLabels"]["values"]) <= set(pin.supportedInstanceTypes)
    assert efa["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    assert efa["values"]["tolerations"] == [TOLERATES_GPU_TAINT]
    assert efa["values"]["nodeSelector"] == {"nemotron.nvidia.com/fabric": "efa"}
    assert efa["values"]["supportedInstanceLabels"] == {
        "keys": ["node.kubernetes.io/instance-type"],
        "values": ["p5en.48xlarge", "p6-b200.48xlarge"],
    }


def test_no_efa_pools_no_efa_plugin_and_no_rdma_plugin():
    run = plugins()
    assert list(releases(run)) == ["nvidia-device-plugin"]
    assert run.of_type(DAEMON_SET) == []
    assert run.of_type(CONFIG_MAP) == []


def test_rdma_shared_device_plugin_exposes_rdma_ib_on_infiniband_nodes():
    run = plugins(infiniband=True)
    config_map = the(run, CONFIG_MAP)
    assert config_map["metadata"] == {"name": "rdma-devices", "namespace": "kube-system"}
    assert json.loads(config_map["data"]["config.json"]) == {
        "configList": [{"resourceName": "ib", "rdmaHcaMax": 63, "selectors": {"vendors": ["15b3"]}}]
    }
    pod = the(run, DAEMON_SET)["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nemotron.nvidia.com/fabric": "ib"}
    assert pod["tolerations"] == [TOLERATES_GPU_TAINT]
    (container,) = pod["containers"]
    assert container["image"] == "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.3"
    assert {"name": "config", "mountPath": "/k8s-rdma-shared-dev-plugin"} in container["volumeMounts"]
    config_volume = next(v for v in pod["volumes"] if v["name"] == "config")
    assert config_volume["configMap"]["name"] == "rdma-devices"
    assert "aws-efa-k8s-device-plugin" not in releases(run)


def test_nvidia_plugin_can_be_left_to_an_existing_gpu_operator():
    run = plugins(infiniband=True, nvidia=False)
    assert releases(run) == {}
    assert run.of_type("kubernetes:core/v1:Namespace") == []
    assert len(run.of_type(DAEMON_SET)) == 1
