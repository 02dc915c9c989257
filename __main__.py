"""Nemotron 3.5 Lightning on AWS: wiring only (config + facts -> plan -> components -> outputs), in dependency
order; each component gets its part of the plan and the inputs wired from other resources."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from components.autoscaling import ClusterAutoscaler, ClusterAutoscalerArgs, ServingAutoscaler
from components.cluster import cluster_handles
from components.device_plugins import DevicePlugins
from components.dra_driver import NvidiaDraDriver
from components.dynamo_platform import DynamoPlatform
from components.gateway import Gateway, GatewayArgs
from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from components.model_cache import (
    ModelCache,
    ModelCacheArgs,
    ModelCacheStorage,
    ModelCacheStorageArgs,
    ModelPrewarm,
    ModelPrewarmArgs,
)
from components.monitoring import Monitoring
from components.operability import Operability, OperabilityArgs
from components.sagemaker_endpoint import SageMakerEndpoint, SageMakerEndpointArgs
from components.serving_namespace import ServingNamespace, ServingNamespaceArgs
from components.serving_target import ServingTarget, ServingTargetArgs
from serving_stack.config import configured_secrets, load_stack_config, secret_value
from serving_stack.config.gateway import MASTER_KEY_SECRET
from serving_stack.contract.outputs import StackOutputs
from serving_stack.facts import load_facts
from serving_stack.facts.dates import today
from serving_stack.plan.cluster import CreatedCluster
from serving_stack.plan.placeholders import placeholders_allowed
from serving_stack.plan.serving import check_target_swap, deployed_dynamo_targets
from serving_stack.plan.stack import build_plan

# Everything that can be wrong with the input fails here, before the first resource.
secrets = configured_secrets()
facts = load_facts()
plan = build_plan(
    load_stack_config(),
    facts,
    default_region=pulumi.Config("aws").get("region"),
    secrets=secrets,
    today=today(),
    allow_placeholders=placeholders_allowed(),
)
for warning in plan.warnings:  # dated pins, a retired target: `pulumi up` and the preview say so
    pulumi.log.warn(warning)

# --- AWS: network, cluster, GPU pools, model-cache storage -----------------------------------------
# An AWS provider only for a stack that makes AWS resources: pools declared `managed: false` on a cluster reached
# by kubeconfig are placement facts (they decide targets and fabrics), and such a stack needs no AWS plugin.
builds_on_aws = isinstance(plan.cluster, CreatedCluster) or bool(plan.managed_pools or plan.storage or plan.sagemaker)
aws_provider = (
    aws.Provider("aws", region=plan.aws.region, default_tags={"tags": dict(plan.aws.tags)})
    if plan.aws and builds_on_aws
    else None
)
aws_providers = {"aws": aws_provider} if aws_provider else {}
on_aws = pulumi.ResourceOptions(providers=aws_providers)
cluster = cluster_handles(plan, on_aws)
on_cluster = pulumi.ResourceOptions(providers={"kubernetes": cluster.kubernetes})
on_both = pulumi.ResourceOptions(providers={**aws_providers, "kubernetes": cluster.kubernetes})
tags = dict(plan.aws.tags) if plan.aws else {}
cluster_scaling = plan.capacity.cluster_scaling

for spec in plan.managed_pools:
    assert cluster.name is not None, "managed pools are planned on EKS only"
    assert cluster.vpc_id is not None
    assert spec.availability_zone is not None
    GpuNodePool(
        f"pool-{spec.name}",
        GpuNodePoolArgs(
            pool=spec,
            cluster_name=cluster.name,
            vpc_id=cluster.vpc_id,
            subnet_id=spec.subnet_id
            or (
                cluster.local_zone_subnets[spec.name]
                if spec.local_zone
                else cluster.subnets_by_az[spec.availability_zone]
            ),
            cluster_security_group_ids=cluster.node_security_groups,
            node_managed_policies=plan.aws.node_managed_policies if plan.aws else (),
            tags=tags,
            tag_for_cluster_autoscaler=cluster_scaling is not None,
            cluster_autoscaler_tags=cluster_scaling.pool_tags[spec.name] if cluster_scaling else {},
        ),
        opts=pulumi.ResourceOptions.merge(on_aws, pulumi.ResourceOptions(depends_on=list(cluster.node_prerequisites))),
    )
if cluster_scaling and cluster.eks and aws_provider:
    ClusterAutoscaler(
        "cluster-autoscaler", ClusterAutoscalerArgs(cluster_scaling, cluster.eks.cluster_name, tags), opts=on_both
    )
if plan.device_plugins:
    DevicePlugins("device-plugins", plan.device_plugins, opts=on_cluster)
if plan.device_plugins and plan.device_plugins.dra_driver:
    NvidiaDraDriver("dra-driver", plan.device_plugins.dra_driver, opts=on_cluster)
cache_storage = []
if plan.storage and cluster.eks and cluster.vpc_id and cluster.vpc_cidr and aws_provider:
    storage_args = ModelCacheStorageArgs(
        storage=plan.storage,
        cluster_name=cluster.eks.cluster_name,
        vpc_id=cluster.vpc_id,
        vpc_cidr=cluster.vpc_cidr,
        private_subnet_ids_by_az=cluster.subnets_by_az,
        claim_namespace=plan.serving.namespace,
        tags=tags,
    )
    cache_storage.append(ModelCacheStorage("model-cache-storage", storage_args, opts=on_both))

# --- Kubernetes: namespace, model cache, prewarm, Dynamo, serving targets --------------------------
serving = plan.serving
namespace = ServingNamespace(
    "serving",
    ServingNamespaceArgs(
        serving,
        hf_token=secret_value("hfToken") if serving.hf_token else None,
        registry_key=secret_value("ngcApiKey") if serving.dynamo.imagePullSecret else None,
    ),
    opts=on_cluster,
)
# The pods' image pull Secret is referenced by name, not by an output: order them after it explicitly.
pull_secret = [namespace] if serving.dynamo.imagePullSecret else []
model_cache = ModelCache(
    "model-cache",
    ModelCacheArgs(
        serving,
        namespace=namespace.namespace_name,
        hf_token_secret_name=namespace.hf_token_secret_name,
        volume_name=cache_storage[0].volume_name if cache_storage else None,
    ),
    opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=[*cache_storage, *pull_secret])),
)
if serving.prewarm_pools:
    ModelPrewarm(
        "model-prewarm",
        ModelPrewarmArgs(
            serving,
            namespace=namespace.namespace_name,
            claim_name=model_cache.claim_name,
            after=model_cache.download_jobs,
        ),
        opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=pull_secret)),
    )
# The platform's PodMonitors need the monitoring CRDs, which their own release brings: the platform waits for
# them, not for the whole kube-prometheus-stack, which installs meanwhile.
monitoring = Monitoring("monitoring", plan.monitoring, opts=on_cluster) if plan.monitoring else None
crds_ready = monitoring.crds_ready if monitoring else []
platform_release: list[pulumi.Resource] = []
if serving.platform.config.install:
    platform = DynamoPlatform(
        "dynamo",
        serving.platform,
        opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=crds_ready)),
    )
    platform_release.append(platform.release)
# The targets this stack's last `up` deployed (its own outputs): a change of targets that one `up` cannot
# finish on full GPU pools fails here, before any DGD is touched (serving_stack.plan.serving.swap_refusal).
last_deployment = pulumi.StackReference(
    "last-deployment", stack_name=f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"
)
swap_checked = last_deployment.get_output("endpoints").apply(
    lambda endpoints: check_target_swap(
        deployed_dynamo_targets(endpoints),
        [t.selected.id for t in serving.targets],
        facts.catalog,
        surge=serving.dynamo.targetSwap == "surge",
    )
)
# Gated workers wait for the download in their pods (`gate_workers`), so kubelet pulls their image meanwhile;
# ungated ones start only once the download Jobs are complete.
weights_ready = [] if serving.model_cache.prewarm.gates_workers else model_cache.download_jobs
graphs = {
    target.selected.id: ServingTarget(
        target.resource_name,
        ServingTargetArgs(target, namespace=namespace.namespace_name, swap_checked=swap_checked),
        opts=pulumi.ResourceOptions.merge(
            on_cluster,
            pulumi.ResourceOptions(depends_on=[*platform_release, *weights_ready, *pull_secret]),
        ),
    )
    for target in serving.targets
}
if plan.capacity.serving_scaling:
    # The ScaledObjects target the scaling adapters the operator creates for the graphs' components.
    ServingAutoscaler(
        "autoscaling",
        plan.capacity.serving_scaling,
        opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=list(graphs.values()))),
    )
if plan.operability:
    Operability(
        "operability",
        OperabilityArgs(
            plan.operability,
            namespace=namespace.namespace_name,
            graphs={target_id: graph.dgd for target_id, graph in graphs.items()},
        ),
        opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=crds_ready)),
    )

# --- SageMaker: managed endpoints (JumpStart or Hugging Face on LMI) ------------------------------
sagemaker_endpoints = {
    endpoint.name: SageMakerEndpoint(
        endpoint.name,
        SageMakerEndpointArgs(
            endpoint, hf_token=secret_value("hfToken") if endpoint.container.needs_hf_token else None
        ),
        opts=on_aws,
    )
    for endpoint in plan.sagemaker
}

# --- Gateway: one OpenAI-compatible URL with failover across the targets and SageMaker (LiteLLM) ----
gateway_key = None
if plan.gateway:
    gateway = plan.gateway
    gateway_key = secret_value(MASTER_KEY_SECRET)
    # The plan invokes SageMaker (an IAM role through EKS Pod Identity) only on the cluster the stack creates.
    assert cluster.name is not None or not gateway.sagemaker
    Gateway(
        "gateway",
        GatewayArgs(
            gateway,
            namespace=namespace.namespace_name,
            master_key=gateway_key,
            cluster_name=cluster.name if gateway.sagemaker else None,
            endpoint_arns=[sagemaker_endpoints[e.id].endpoint_arn for e in gateway.sagemaker],
            tags=tags,
        ),
        opts=pulumi.ResourceOptions(providers=[p for p in (cluster.kubernetes, aws_provider) if p]),
    )

# --- Outputs: the versioned contract (serving_stack/contract/outputs.py) ----------------------------
contract = StackOutputs(
    endpoints=plan.endpoints,
    nodePools=list(plan.pool_costs),
    gateway=plan.gateway.output if plan.gateway else None,
)
outputs: dict[str, object] = contract.model_dump(mode="json")
if cluster.eks:
    outputs["cluster"] = {"name": cluster.eks.cluster_name, "endpoint": cluster.eks.endpoint}
    outputs["kubeconfig"] = cluster.eks.kubeconfig
outputs["gatewayApiKey"] = gateway_key  # a secret: apps read it through a StackReference (examples/README.md)
for key, value in outputs.items():
    pulumi.export(key, value)
