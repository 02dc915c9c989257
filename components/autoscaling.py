"""Scaling with load: `ServingAutoscaler` (KEDA and one ScaledObject per autoscaled DGD worker component)
and `ClusterAutoscaler` (cluster-autoscaler with an EKS Pod Identity role). The Auto Scaling group tags that
let it find the GPU node groups and scale them up from zero are the node pools' (`GpuNodePool`). What the
objects contain is decided in `serving_stack.plan.capacity`; these components only register them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from serving_stack.facts.aws import HelmPin
from serving_stack.names import TypeTokens

POD_IDENTITY_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ],
}


@dataclass(frozen=True)
class ServingAutoscalerArgs:
    """`scaled_objects`: rendered ScaledObjects (`autoscaling_plan.scaled_object`); `install_keda`: off where
    KEDA already runs. `depends_on`: the DGDs whose adapters the objects target."""

    keda: HelmPin  # the KEDA chart, pinned
    install_keda: bool  # install KEDA (off where it already runs)
    scaled_objects: Sequence[Mapping[str, Any]]  # the rendered ScaledObjects, one per autoscaled worker component
    depends_on: Sequence[pulumi.Resource] = ()  # the DGDs whose scaling adapters the objects target


class ServingAutoscaler(pulumi.ComponentResource):
    def __init__(self, name: str, args: ServingAutoscalerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.SERVING_AUTOSCALER, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        after: list[pulumi.Resource] = list(args.depends_on)
        if args.install_keda:
            namespace = k8s.core.v1.Namespace(
                f"{name}-keda-namespace", metadata={"name": args.keda.namespace}, opts=child
            )
            after.append(
                k8s.helm.v3.Release(
                    f"{name}-keda",
                    name="keda",
                    chart=args.keda.chart,
                    version=args.keda.version,
                    repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=args.keda.repository),
                    namespace=namespace.metadata.name,
                    atomic=True,
                    opts=child,
                )
            )
        self.scaled_objects = [
            k8s.apiextensions.CustomResource(
                f"{name}-{obj['metadata']['name']}",
                api_version=obj["apiVersion"],
                kind=obj["kind"],
                metadata=obj["metadata"],
                spec=obj["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )
            for obj in args.scaled_objects
        ]
        self.scaled_object_names = [str(obj["metadata"]["name"]) for obj in args.scaled_objects]
        self.register_outputs({"scaledObjects": self.scaled_object_names})


@dataclass(frozen=True)
class ClusterAutoscalerArgs:
    """`policy` / `values`: from `cluster_autoscaler` (`cluster_autoscaler_policy`, `cluster_autoscaler_values`)."""

    cluster_name: pulumi.Input[str]  # the EKS cluster the Pod Identity association and discovery tags name
    chart: HelmPin  # the cluster-autoscaler chart, pinned (image minor = the cluster's Kubernetes minor)
    service_account: str  # the ServiceAccount the IAM role is associated with
    policy: Mapping[str, Any]  # the IAM policy document of its role
    values: Mapping[str, Any]  # the Helm values
    tags: Mapping[str, str]  # tags on its AWS resources


class ClusterAutoscaler(pulumi.ComponentResource):
    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.CLUSTER_AUTOSCALER, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-role", assume_role_policy=json.dumps(POD_IDENTITY_TRUST), tags=dict(args.tags), opts=child
        )
        policy = aws.iam.RolePolicy(f"{name}-policy", role=role.id, policy=json.dumps(args.policy), opts=child)
        association = aws.eks.PodIdentityAssociation(
            f"{name}-pod-identity",
            cluster_name=args.cluster_name,
            namespace=args.chart.namespace,
            service_account=args.service_account,
            role_arn=role.arn,
            tags=dict(args.tags),
            opts=child,
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="cluster-autoscaler",
            chart=args.chart.chart,
            version=args.chart.version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=args.chart.repository),
            namespace=args.chart.namespace,
            values=dict(args.values),
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy, association]),
        )
        self.role_arn = role.arn
        self.register_outputs({"roleArn": self.role_arn})
