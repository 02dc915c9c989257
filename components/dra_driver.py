"""The NVIDIA DRA driver for GPUs (pinned Helm release) with ComputeDomains only: IMEX domains that let the
pods of one workload share multi-node NVLink on P6e-GB200 UltraServers. GPUs stay with the NVIDIA device
plugin (the driver's GPU allocation is experimental; the EKS UltraServer guide turns it off)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components import helm_release
from components.device_plugins import TOLERATE_GPU_TAINT
from serving_stack.names import POOL_LABEL, TypeTokens
from serving_stack.plan.cluster import DraDriverPlan


def _required(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]
            }
        }
    }


def dra_driver_values(pools: Sequence[str]) -> dict[str, Any]:
    """ComputeDomains on, GPUs off. The chart pins its controller to control-plane nodes, which EKS does not
    have: its affinity is replaced by any Linux node (Helm replaces lists; a null would not reach the chart,
    Pulumi drops it) and its control-plane toleration dropped, so it lands on untainted (system) nodes. The
    kubelet plugin runs on the pools' GPU nodes, tolerating their taint."""
    return {
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "controller": {
            "affinity": _required({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}),
            "tolerations": [],
        },
        "kubeletPlugin": {
            "affinity": _required(
                {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
                {"key": POOL_LABEL, "operator": "In", "values": sorted(pools)},
            ),
            "tolerations": [TOLERATE_GPU_TAINT],
        },
    }


class NvidiaDraDriver(pulumi.ComponentResource):
    """`plan`: the chart, and the node pools whose nodes run the kubelet plugin (by pool label)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, plan: DraDriverPlan, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.DRA_DRIVER, name, None, opts)
        chart = plan.chart
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata={"name": chart.namespace}, opts=pulumi.ResourceOptions(parent=self)
        )
        # Its ClusterRoles and DeviceClasses have fixed names: a replacement must delete the old release first.
        replace = pulumi.ResourceOptions(parent=self, delete_before_replace=True)
        values = dra_driver_values(plan.pools)
        self.release = helm_release(
            f"{name}-release", chart.chart, chart, namespace.metadata.name, replace, values=values
        )
        self.register_outputs({"status": self.release.status})
