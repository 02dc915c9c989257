"""Nemotron 3.5 Lightning on NVIDIA Dynamo: wiring only (config -> components -> outputs)."""
import pulumi
import pulumi_kubernetes as k8s

from components.dynamo_platform import DynamoPlatform, DynamoPlatformArgs
from components.model_cache import ModelCache, ModelCacheArgs
from components.model_prewarm import ModelPrewarm, ModelPrewarmArgs
from components.serving_namespace import ServingNamespace, ServingNamespaceArgs
from components.serving_target import ServingTarget, ServingTargetArgs
from nemotron.catalog import load_catalog, load_platform
from nemotron.config import hf_token, load_stack_config
from nemotron.manifests import render_download_job, render_model_cache_pvc
from nemotron.outputs import StackOutputs
from nemotron.prewarm_plan import PROGRAM_FILE
from nemotron.serving_plan import plan_prewarm, plan_targets, platform_chart, serving_settings

config = load_stack_config()
catalog = load_catalog()
planned_targets = plan_targets(config, catalog)
prewarm_pools = plan_prewarm(config, planned_targets)
chart_url, platform_values = platform_chart(config, load_platform())
settings = serving_settings(config)

cluster = config.kubernetes.cluster
kubernetes = k8s.Provider(
    "kubernetes",
    context=cluster.context,
    kubeconfig=cluster.kubeconfigPath,
    delete_unreachable=False,
)
on_cluster = pulumi.ResourceOptions(providers={"kubernetes": kubernetes})

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
    opts=on_cluster,
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

contract = StackOutputs(endpoints=[p.endpoint for p in planned_targets])
for key, value in contract.model_dump(mode="json").items():
    pulumi.export(key, value)
