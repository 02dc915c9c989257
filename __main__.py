"""Nemotron 3.5 Lightning on AWS: wiring only (config -> components -> outputs)."""
import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from serving_stack.components.device_plugins import DevicePlugins, DevicePluginsArgs
from serving_stack.components.dynamo_platform import DynamoPlatform, DynamoPlatformArgs
from serving_stack.components.eks_cluster import EksCluster, EksClusterArgs, SystemNodeGroupSpec
from serving_stack.components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from serving_stack.components.model_cache import ModelCache, ModelCacheArgs
from serving_stack.components.model_cache_storage import ModelCacheStorage, ModelCacheStorageArgs
from serving_stack.components.model_prewarm import ModelPrewarm, ModelPrewarmArgs
from serving_stack.components.network import Network, NetworkArgs
from serving_stack.components.sagemaker_endpoint import SageMakerEndpoint, SageMakerEndpointArgs
from serving_stack.components.serving_namespace import ServingNamespace, ServingNamespaceArgs
from serving_stack.components.serving_target import ServingTarget, ServingTargetArgs
from serving_stack.facts.catalog import load_catalog, load_platform
from serving_stack.config import hf_token, load_stack_config
from serving_stack.facts.instance_types import load_aws_catalog
from serving_stack.plan.manifests import render_download_job, render_model_cache_pvc
from serving_stack.contract.outputs import StackOutputs
from serving_stack.plan.pools import pool_cost_rows, resolve_pools
from serving_stack.plan.prewarm import PROGRAM_FILE
from serving_stack.plan.sagemaker import plan_sagemaker_endpoints
from serving_stack.plan.serving import plan_prewarm, plan_targets, platform_chart, serving_settings

# Everything that can be wrong with the input fails here, before the first resource.
config = load_stack_config()
catalog = load_catalog()
aws_catalog = load_aws_catalog()
pools = resolve_pools(config, aws_catalog)
planned_targets = plan_targets(config, catalog, pools)
prewarm_pools = plan_prewarm(config, planned_targets)
chart_url, platform_values = platform_chart(config, load_platform())
settings = serving_settings(config)
cluster = config.kubernetes.cluster
aws_config = config.aws
pins = aws_catalog.platform
planned_endpoints = plan_sagemaker_endpoints(
    config, default_region=aws_config.region if aws_config else pulumi.Config("aws").get("region")
)

# --- AWS: network, cluster, GPU pools -------------------------------------------------------------
if aws_config:
    aws_provider = aws.Provider("aws", region=aws_config.region, default_tags={"tags": aws_config.tags})
    on_aws = pulumi.ResourceOptions(providers={"aws": aws_provider})

if cluster.source == "eks":
    create, system = aws_config.cluster.create, aws_config.systemNodeGroup
    network = Network(
        "network",
        NetworkArgs(
            cluster_name=create.name, region=aws_config.region, cidr=create.vpcCidr,
            availability_zones=create.availabilityZones, nat_gateway_per_az=create.natGatewayPerAz,
        ),
        opts=on_aws,
    )
    eks = EksCluster(
        "eks",
        EksClusterArgs(
            cluster_name=create.name, kubernetes_version=create.kubernetesVersion, region=aws_config.region,
            private_subnet_ids=network.private_subnet_ids,
            endpoint_public_access_cidrs=create.endpointPublicAccessCidrs,
            log_retention_days=create.controlPlaneLogRetentionDays,
            system_nodes=SystemNodeGroupSpec(
                system.instanceTypes, system.minSize, system.desiredSize, system.maxSize, system.diskSizeGiB
            ),
            addons=pins.eksAddons.cluster, node_managed_policies=pins.nodeManagedPolicies,
        ),
        opts=on_aws,
    )
    kubernetes = eks.provider
    cluster_name, vpc_id = eks.cluster_name, network.vpc_id
    subnets_by_az, node_security_groups = network.private_subnet_ids_by_az, [eks.cluster_security_group_id]
else:
    kubernetes = k8s.Provider(
        "kubernetes", context=cluster.context, kubeconfig=cluster.kubeconfigPath, delete_unreachable=False
    )
    existing = aws_config.cluster.existing if aws_config and aws_config.cluster else None
    if existing:
        cluster_name, vpc_id = existing.name, existing.vpcId
        subnets_by_az, node_security_groups = existing.privateSubnetIds, existing.nodeSecurityGroupIds
on_cluster = pulumi.ResourceOptions(providers={"kubernetes": kubernetes})

for pool in pools.values():
    if pool.managed:
        GpuNodePool(
            f"pool-{pool.name}",
            GpuNodePoolArgs(
                pool=pool, cluster_name=cluster_name, vpc_id=vpc_id,
                subnet_id=pool.subnet_id or subnets_by_az[pool.availability_zone],
                cluster_security_group_ids=node_security_groups,
                node_managed_policies=pins.nodeManagedPolicies, tags=aws_config.tags,
            ),
            opts=on_aws,
        )
if pools:
    wanted = aws_config.devicePlugins
    DevicePlugins(
        "device-plugins",
        DevicePluginsArgs(
            plugins=pins.devicePlugins,
            efa_instance_types=[p.instance_type for p in pools.values() if p.fabric == "efa"] if wanted.efa else [],
            infiniband=wanted.rdmaSharedDevice and any(p.fabric == "ib" for p in pools.values()),
            nvidia=wanted.nvidia,
        ),
        opts=on_cluster,
    )
cache_storage = []
if aws_config and aws_config.modelCacheStorage:
    storage = aws_config.modelCacheStorage
    cache_storage = [
        ModelCacheStorage(
            "model-cache-storage",
            ModelCacheStorageArgs(
                backend=storage.backend, storage_class_name=config.modelCache.storageClassName,
                protect=storage.protect, cluster_name=eks.cluster_name, vpc_id=network.vpc_id,
                vpc_cidr=create.vpcCidr, private_subnet_ids_by_az=network.private_subnet_ids_by_az,
                csi_addon=pins.eksAddons.efsCsiDriver if storage.backend == "efs" else pins.eksAddons.fsxCsiDriver,
                efs=storage.efs, fsx=storage.fsx, fsx_availability_zone=aws_config.fsx_availability_zone(),
                tags=aws_config.tags,
            ),
            opts=pulumi.ResourceOptions(providers={"aws": aws_provider, "kubernetes": kubernetes}),
        )
    ]

# --- Kubernetes: namespace, model cache, prewarm, Dynamo, serving targets --------------------------
serving_namespace = ServingNamespace(
    "serving", ServingNamespaceArgs(namespace=config.kubernetes.namespace, hf_token=hf_token()), opts=on_cluster
)
model_cache = ModelCache(
    "model-cache",
    ModelCacheArgs(
        namespace=serving_namespace.namespace_name,
        hf_token_secret_name=serving_namespace.hf_token_secret_name,
        pvc=render_model_cache_pvc(catalog, config.modelCache, settings),
        download_job=render_download_job(catalog, config.modelCache, settings),
        retain_on_delete=config.modelCache.retainOnDelete,
    ),
    opts=pulumi.ResourceOptions(providers={"kubernetes": kubernetes}, depends_on=cache_storage),
)
if prewarm_pools:
    ModelPrewarm(
        "model-prewarm",
        ModelPrewarmArgs(
            namespace=serving_namespace.namespace_name,
            claim_name=model_cache.claim_name,
            program_source=PROGRAM_FILE.read_text(),
            pools=prewarm_pools,
            settings=config.modelCache.prewarm,
        ),
        opts=on_cluster,
    )
platform = DynamoPlatform(
    "dynamo",
    DynamoPlatformArgs(
        namespace=config.dynamo.platform.namespace,
        release_name=config.dynamo.platform.releaseName,
        chart_url=chart_url,
        values=platform_values,
    ),
    opts=on_cluster,
)
for planned in planned_targets:
    ServingTarget(
        planned.resource_name,
        ServingTargetArgs(
            namespace=serving_namespace.namespace_name,
            config_map=planned.config_map,
            dgd=planned.dgd,
            depends_on=[platform.release, model_cache.download_job],
        ),
        opts=on_cluster,
    )

# --- SageMaker: managed endpoints (JumpStart or Hugging Face on LMI) ------------------------------
for endpoint in planned_endpoints:
    SageMakerEndpoint(
        endpoint.name,
        SageMakerEndpointArgs.from_plan(endpoint, hf_token=hf_token() if endpoint.container.needs_hf_token else None),
        opts=on_aws if aws_config else None,
    )

# --- Outputs: the versioned contract ---------------------------------------------------------------
contract = StackOutputs(endpoints=[p.endpoint for p in planned_targets] + [e.endpoint for e in planned_endpoints])
for key, value in contract.model_dump(mode="json").items():
    pulumi.export(key, value)
pulumi.export("nodePools", [row.as_dict() for row in pool_cost_rows(pools)])
if cluster.source == "eks":
    pulumi.export("cluster", {"name": eks.cluster_name, "endpoint": eks.endpoint})
    pulumi.export("kubeconfig", eks.kubeconfig)
