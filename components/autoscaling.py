"""Scaling with load, as planned in `serving_stack.plan.autoscaling`: `ServingAutoscaler` (KEDA and one
ScaledObject per autoscaled DGD worker component) and `ClusterAutoscaler` (cluster-autoscaler with an EKS Pod
Identity role). The Auto Scaling group tags that let it find the GPU node groups are the pools' (`GpuNodePool`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components import children_wait_for
from components.iam import assume_role_policy
from serving_stack.names import TypeTokens
from serving_stack.plan.autoscaling import ClusterScalingPlan, ServingScalingPlan


@dataclass(frozen=True)
class ServingAutoscalerArgs:
    plan: ServingScalingPlan  # KEDA's chart (installed unless it runs already) and the ScaledObjects


class ServingAutoscaler(pulumi.ComponentResource):
    """`opts.depends_on`: the graphs whose scaling adapters the ScaledObjects target (they wait for them)."""

    def __init__(self, name: str, args: ServingAutoscalerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        opts, after = children_wait_for(opts)
        super().__init__(TypeTokens.SERVING_AUTOSCALER, name, None, opts)
        child, keda = pulumi.ResourceOptions(parent=self), args.plan.keda
        if args.plan.install_keda:
            namespace = k8s.core.v1.Namespace(f"{name}-keda-namespace", metadata={"name": keda.namespace}, opts=child)
            after.append(
                k8s.helm.v3.Release(
                    f"{name}-keda",
                    name="keda",
                    chart=keda.chart,
                    version=keda.version,
                    repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=keda.repository),
                    namespace=namespace.metadata.name,
                    atomic=True,
                    opts=child,
                )
            )
        for obj in args.plan.scaled_objects:
            k8s.apiextensions.CustomResource(
                f"{name}-{obj['metadata']['name']}",
                api_version=obj["apiVersion"],
                kind=obj["kind"],
                metadata=obj["metadata"],
                spec=obj["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )
        self.register_outputs({"scaledObjects": [str(obj["metadata"]["name"]) for obj in args.plan.scaled_objects]})


@dataclass(frozen=True)
class ClusterAutoscalerArgs:
    plan: ClusterScalingPlan  # the chart, its ServiceAccount, the IAM policy and the Helm values
    cluster_name: pulumi.Input[str]  # the EKS cluster the Pod Identity association names
    tags: Mapping[str, str] = field(default_factory=dict)  # tags on its AWS resources


class ClusterAutoscaler(pulumi.ComponentResource):
    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.CLUSTER_AUTOSCALER, name, None, opts)
        child, plan = pulumi.ResourceOptions(parent=self), args.plan
        trust = assume_role_policy("pods.eks.amazonaws.com", tag_session=True)
        role = aws.iam.Role(f"{name}-role", assume_role_policy=trust, tags=dict(args.tags), opts=child)
        policy = aws.iam.RolePolicy(f"{name}-policy", role=role.id, policy=json.dumps(plan.policy), opts=child)
        association = aws.eks.PodIdentityAssociation(
            f"{name}-pod-identity",
            cluster_name=args.cluster_name,
            namespace=plan.chart.namespace,
            service_account=plan.chart.serviceAccount,
            role_arn=role.arn,
            tags=dict(args.tags),
            opts=child,
        )
        k8s.helm.v3.Release(
            f"{name}-release",
            name="cluster-autoscaler",
            chart=plan.chart.chart,
            version=plan.chart.version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=plan.chart.repository),
            namespace=plan.chart.namespace,
            values=dict(plan.values),
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy, association]),
        )
        self.register_outputs({"roleArn": role.arn})
