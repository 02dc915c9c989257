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

from components import children_wait_for, custom_resource, helm_release
from components.iam import assume_role_policy
from serving_stack.names import TypeTokens
from serving_stack.plan.autoscaling import ClusterScalingPlan, ServingScalingPlan


class ServingAutoscaler(pulumi.ComponentResource):
    """KEDA's chart (installed unless it runs already) and the ScaledObjects of `plan`. `opts.depends_on`: the
    graphs whose scaling adapters the ScaledObjects target (they wait for them)."""

    def __init__(self, name: str, plan: ServingScalingPlan, opts: Optional[pulumi.ResourceOptions] = None):
        opts, after = children_wait_for(opts)
        super().__init__(TypeTokens.SERVING_AUTOSCALER, name, None, opts)
        child, keda = pulumi.ResourceOptions(parent=self), plan.keda
        if plan.install_keda:
            namespace = k8s.core.v1.Namespace(f"{name}-keda-namespace", metadata={"name": keda.namespace}, opts=child)
            after.append(helm_release(f"{name}-keda", "keda", keda, namespace.metadata.name, child))
        after_graphs = pulumi.ResourceOptions(parent=self, depends_on=after)
        for obj in plan.scaled_objects:
            custom_resource(f"{name}-{obj['metadata']['name']}", obj, obj["metadata"]["namespace"], after_graphs)
        self.register_outputs({"scaledObjects": [str(obj["metadata"]["name"]) for obj in plan.scaled_objects]})


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
        credentials = pulumi.ResourceOptions(parent=self, depends_on=[policy, association])
        chart = plan.chart
        helm_release(
            f"{name}-release", "cluster-autoscaler", chart, chart.namespace, credentials, values=dict(plan.values)
        )
        self.register_outputs({"roleArn": role.arn})
