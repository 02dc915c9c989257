"""Device plugins that turn GPU pool hardware into schedulable resources: `nvidia.com/gpu` (+ GPU Feature
Discovery's `nvidia.com/gpu.product` labels), `vpc.amazonaws.com/efa` on EFA pools and `rdma/ib` on
InfiniBand pools. Every plugin tolerates the GPU taint and selects the pools' fabric label."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components import helm_release
from serving_stack.facts.aws import RdmaSharedDevicePlugin
from serving_stack.names import FABRIC_LABEL, FORMER_TYPE_TOKENS, GPU_TAINT, INSTANCE_TYPE_LABEL, TypeTokens
from serving_stack.plan.cluster import DevicePluginSet

TOLERATE_GPU_TAINT = {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}


def nvidia_values() -> dict[str, Any]:
    """GFD on; MOFED off (0.19.0-0.19.2 defaulted it on, which breaks the EFA plugin); NFD workers
    tolerate the GPU taint (the chart's default tolerates `nvidia.com/gpu=present` only)."""
    return {
        "gfd": {"enabled": True},
        "mofedEnabled": False,
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, TOLERATE_GPU_TAINT],
        "nfd": {"worker": {"tolerations": [TOLERATE_GPU_TAINT]}},
    }


def efa_values(instance_types: Sequence[str]) -> dict[str, Any]:
    """Only on EFA pools: the chart's instance-type allowlist lags new types, so it is set to ours."""
    return {
        "tolerations": [TOLERATE_GPU_TAINT],
        "nodeSelector": {FABRIC_LABEL: "efa"},
        "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL], "values": sorted(set(instance_types))},
    }


def rdma_devices_config(plugin: RdmaSharedDevicePlugin) -> str:
    """`config.json` of the `rdma-devices` ConfigMap: Mellanox HCAs shared as `rdma/<resourceName>`."""
    device = {"resourceName": plugin.resourceName, "rdmaHcaMax": plugin.rdmaHcaMax}
    return json.dumps({"configList": [{**device, "selectors": {"vendors": list(plugin.vendors)}}]})


class DevicePlugins(pulumi.ComponentResource):
    """`plan`: which plugins to install (switches), their pins and the EFA pools' instance types."""

    def __init__(self, name: str, plan: DevicePluginSet, opts: Optional[pulumi.ResourceOptions] = None):
        aliases = [pulumi.Alias(type_=token) for token in FORMER_TYPE_TOKENS[TypeTokens.DEVICE_PLUGINS]]
        super().__init__(
            TypeTokens.DEVICE_PLUGINS,
            name,
            None,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=aliases)),
        )
        pins, child = plan.pins, pulumi.ResourceOptions(parent=self)
        # A release keeps its name and its chart's cluster-scoped objects are named after it: a replacement
        # (another namespace) must delete the old release first.
        replace, releases = pulumi.ResourceOptions(parent=self, delete_before_replace=True), []
        if plan.nvidia:
            nvidia = k8s.core.v1.Namespace(
                f"{name}-nvidia-namespace", metadata={"name": pins.nvidia.namespace}, opts=child
            )
            release, values = "nvidia-device-plugin", nvidia_values()
            releases.append(
                helm_release(f"{name}-nvidia", release, pins.nvidia, nvidia.metadata.name, replace, values=values)
            )
        if plan.efa:
            release, values = "aws-efa-k8s-device-plugin", efa_values(plan.efa_instance_types)
            releases.append(helm_release(f"{name}-efa", release, pins.efa, pins.efa.namespace, replace, values=values))
        if plan.infiniband:
            self._rdma_shared_device_plugin(name, plan.pins.rdmaSharedDevice)
        self.register_outputs({"releases": [r.status for r in releases]})

    def _rdma_shared_device_plugin(self, name: str, plugin: RdmaSharedDevicePlugin) -> None:
        """ConfigMap `rdma-devices` + the upstream DaemonSet (deployment/k8s/base), on `ib` nodes only."""
        child = pulumi.ResourceOptions(parent=self)
        config = k8s.core.v1.ConfigMap(
            f"{name}-rdma-devices",
            metadata={"name": "rdma-devices", "namespace": plugin.namespace},
            data={"config.json": rdma_devices_config(plugin)},
            opts=child,
        )
        labels, config_items = {"name": "rdma-shared-dp-ds"}, [{"key": "config.json", "path": "config.json"}]
        host_paths = {
            "device-plugin": "/var/lib/kubelet/device-plugins",
            "plugins-registry": "/var/lib/kubelet/plugins_registry",
            "devs": "/dev/",
        }
        k8s.apps.v1.DaemonSet(
            f"{name}-rdma",
            metadata={"name": "rdma-shared-dp-ds", "namespace": plugin.namespace},
            spec={
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "hostNetwork": True,
                        "priorityClassName": "system-node-critical",
                        "nodeSelector": {FABRIC_LABEL: "ib"},
                        "tolerations": [TOLERATE_GPU_TAINT],
                        "containers": [
                            {
                                "name": "k8s-rdma-shared-dp-ds",
                                "image": plugin.image,
                                "imagePullPolicy": "IfNotPresent",
                                "securityContext": {"privileged": True},
                                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                                "volumeMounts": [
                                    *({"name": volume, "mountPath": path} for volume, path in host_paths.items()),
                                    {"name": "config", "mountPath": "/k8s-rdma-shared-dev-plugin"},
                                ],
                            }
                        ],
                        "volumes": [
                            *({"name": volume, "hostPath": {"path": path}} for volume, path in host_paths.items()),
                            {"name": "config", "configMap": {"name": config.metadata.name, "items": config_items}},
                        ],
                    },
                },
            },
            opts=child,
        )
