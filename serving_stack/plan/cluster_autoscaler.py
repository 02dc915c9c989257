"""cluster-autoscaler, as plain data: the tags a GPU node group's Auto Scaling group carries for
auto-discovery and scale-up from zero, the IAM policy the autoscaler runs with, and its chart values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serving_stack.names import GPU_PRODUCT_LABEL, GPU_TAINT

CA_TAG_PREFIX = "k8s.io/cluster-autoscaler"


def node_group_autoscaler_tags(
    cluster_name: str,
    node_labels: Mapping[str, str],
    gpu_product: str,
    gpus_per_node: int,
    efa_interfaces: int,
    taint_gpu: bool = True,
) -> dict[str, str]:
    """Tags for a GPU node group's Auto Scaling group: auto-discovery, plus the node-template hints that let
    cluster-autoscaler scale it up from zero nodes (it cannot read labels, taints or extended resources from
    a node that does not exist; the EKS API fallback only covers a group that never had a node).
    `gpu_product` matters most: workers select `nvidia.com/gpu.product`, which GPU Feature Discovery sets
    on a running node only, so without the hint no empty group ever matches a pending worker."""
    tags = {f"{CA_TAG_PREFIX}/enabled": "true", f"{CA_TAG_PREFIX}/{cluster_name}": "owned"}
    labels = {**node_labels, GPU_PRODUCT_LABEL: gpu_product}
    tags |= {f"{CA_TAG_PREFIX}/node-template/label/{key}": value for key, value in sorted(labels.items())}
    if taint_gpu:
        tags[f"{CA_TAG_PREFIX}/node-template/taint/{GPU_TAINT['key']}"] = f"{GPU_TAINT['value']}:{GPU_TAINT['effect']}"
    tags[f"{CA_TAG_PREFIX}/node-template/resources/nvidia.com/gpu"] = str(gpus_per_node)
    if efa_interfaces:
        tags[f"{CA_TAG_PREFIX}/node-template/resources/vpc.amazonaws.com/efa"] = str(efa_interfaces)
    return tags


def cluster_autoscaler_policy(cluster_name: str) -> dict[str, Any]:
    """Least privilege for auto-discovery: reads on `*` (those actions support no resource scoping);
    scaling writes only on groups tagged as this cluster's; DescribeNodegroup only on its node groups."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Discover",
                "Effect": "Allow",
                "Resource": "*",
                "Action": [
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:DescribeAutoScalingInstances",
                    "autoscaling:DescribeLaunchConfigurations",
                    "autoscaling:DescribeScalingActivities",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplateVersions",
                    "ec2:GetInstanceTypesFromInstanceRequirements",
                ],
            },
            {
                "Sid": "ScaleOwnGroups",
                "Effect": "Allow",
                "Resource": "*",
                "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                "Condition": {"StringEquals": {f"aws:ResourceTag/{CA_TAG_PREFIX}/{cluster_name}": "owned"}},
            },
            {
                "Sid": "ReadOwnNodegroups",
                "Effect": "Allow",
                "Action": ["eks:DescribeNodegroup"],
                "Resource": f"arn:aws:eks:*:*:nodegroup/{cluster_name}/*/*",
            },
        ],
    }


def cluster_autoscaler_values(cluster_name: str, region: str, image_tag: str, service_account: str) -> dict[str, Any]:
    """Chart values: AWS auto-discovery by the cluster's tags, the least-waste expander (fewest idle GPUs),
    and no scale-down of nodes that hold the prewarmed page cache for less than 10 minutes."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "image": {"tag": image_tag},
        "rbac": {"serviceAccount": {"create": True, "name": service_account}},
        "extraArgs": {
            "expander": "least-waste",
            "balance-similar-node-groups": True,
            "skip-nodes-with-local-storage": False,
            "scale-down-unneeded-time": "10m",
            "scale-down-delay-after-add": "10m",
        },
    }
