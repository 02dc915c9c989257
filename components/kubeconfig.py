"""The kubeconfig of the EKS cluster the stack creates, from the cluster's outputs: text, not a resource,
so `eks_cluster` keeps only the resources."""

from __future__ import annotations

import pulumi


def kubeconfig(
    cluster_name: str, region: str, endpoint: pulumi.Input[str], ca_data: pulumi.Input[str]
) -> pulumi.Output[str]:
    """A kubeconfig that authenticates with `aws eks get-token` (no static credentials in state)."""
    return pulumi.Output.json_dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}
            ],
            "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
            "current-context": cluster_name,
            "users": [
                {
                    "name": cluster_name,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "aws",
                            "args": [
                                "eks",
                                "get-token",
                                "--cluster-name",
                                cluster_name,
                                "--region",
                                region,
                                "--output",
                                "json",
                            ],
                        }
                    },
                }
            ],
        }
    )
