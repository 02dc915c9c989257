"""What the committed dev and prod stacks register on the Kubernetes side, value by value."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from serving_stack.config.serving import TargetConfig
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.targets import effective_replicas, gpus_used
from serving_stack.plan.model_cache import env_name_tuple
from stack_helpers import DGD_TYPE, rendered_stack

pytestmark = pytest.mark.catalog_driven


def _inputs(stack: str, type_token: str) -> list[dict]:
    return [r.inputs for r in rendered_stack(stack).resources if r.type == type_token]


def test_dev_is_one_single_gpu_aggregated_target():
    run = rendered_stack("dev")
    (dgd,) = _inputs("dev", DGD_TYPE)
    assert dgd["metadata"] == {
        "name": "vllm-agg-h100-mtp", "namespace": "nemotron-dev",
        "labels": {"app.kubernetes.io/name": "vllm-agg-h100-mtp", "app.kubernetes.io/part-of": "dynamo"},
    }
    assert [e["gpus"] for e in run.outputs["endpoints"]] == [1]


def test_prod_endpoints_are_its_targets_with_their_gpus_and_published_figures():
    """prod (Pulumi.prod.yaml) spans a KV-router variant and a disaggregated target with a decode override."""
    project_dir = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((project_dir / "Pulumi.prod.yaml").read_text())["config"]["nemotron-lightning:targets"]
    endpoints = {e["id"]: e for e in rendered_stack("prod").outputs["endpoints"] if e["kind"] == "dynamo"}
    assert sorted(endpoints) == sorted(t["id"] for t in config)
    recipes = [load_catalog().recipe(t["id"]) for t in config]
    assert {"kv", "1P1D"} <= {r.routing for r in recipes}
    for target in config:
        recipe = load_catalog().recipe(target["id"])
        gpus = gpus_used(recipe, effective_replicas(recipe, TargetConfig(**target)))
        per_gpu = recipe.entry.performance.outputTokensPerSecondPerGpu
        assert endpoints[target["id"]]["gpus"] == gpus
        assert endpoints[target["id"]]["expectedOutputTokensPerSecond"] == (None if per_gpu is None else round(per_gpu * gpus, 2))


def test_hf_token_secret_and_pull_secret():
    (secret,) = [r for r in rendered_stack("dev").resources if r.type == "kubernetes:core/v1:Secret"]
    assert secret.to_json()["inputs"]["metadata"] == {"name": "hf-token-secret", "namespace": "nemotron-dev"}
    assert secret.to_json()["inputs"]["stringData"] == {"HF_TOKEN": "[secret]"}
    (dgd,) = _inputs("dev", DGD_TYPE)
    assert {str(c["podTemplate"]["spec"]["imagePullSecrets"]) for c in dgd["spec"]["components"]} == {"[{'name': 'ngc-registry'}]"}


def test_model_cache_pvc_and_download_jobs():
    """prod downloads every upstream checkpoint set as upstream does; dev (`drafts: []`) only the base, under
    upstream's env name, with the script's loop rewritten to it."""
    cache = load_catalog().model_cache
    (pvc,) = _inputs("prod", "kubernetes:core/v1:PersistentVolumeClaim")
    assert pvc["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1200Gi"}}, "storageClassName": "fsx-lustre"}
    prod_jobs = {job["metadata"]["name"]: job for job in _inputs("prod", "kubernetes:batch/v1:Job")}
    assert sorted(prod_jobs) == sorted(job.name for job in cache.jobs)
    for job in cache.jobs:
        container = prod_jobs[job.name]["spec"]["template"]["spec"]["containers"][0]
        assert [(e["name"], e["value"]) for e in container["env"] if e["name"] in dict(job.checkpoints)] == list(job.checkpoints)
        assert container["args"] == job.container["args"]
    base = cache.jobs[0].repos[0]
    (job,) = _inputs("dev", "kubernetes:batch/v1:Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    upstream_names = {name for upstream in cache.jobs for name, _ in upstream.checkpoints}
    assert [e for e in container["env"] if e["name"] in upstream_names] == [{"name": cache.env_name_of(base), "value": base}]
    assert f"for env_name in {env_name_tuple([cache.env_name_of(base)])}:" in container["args"][0]
    assert container["envFrom"] == [{"secretRef": {"name": "hf-token-secret"}}]


def test_model_cache_is_retained_in_prod_only():
    for stack, retained in (("dev", False), ("prod", True)):
        (pvc,) = [r for r in rendered_stack(stack).resources if r.type == "kubernetes:core/v1:PersistentVolumeClaim"]
        assert pvc.retain_on_delete is retained and pvc.protect is retained


def test_dynamo_platform_release_is_pinned_and_targets_wait_for_it():
    release = rendered_stack("prod").named("dynamo-release").inputs
    assert release["chart"] == "https://helm.ngc.nvidia.com/nvidia/ai-dynamo/charts/dynamo-platform-1.4.0.tgz"
    assert release["namespace"] == "dynamo-system" and release["name"] == "dynamo-platform"
    assert release["values"]["dynamo-operator"]["upgradeCRD"] is True
    assert release["values"]["global"]["nats"] == {"install": False}
    for dgd in [r for r in rendered_stack("prod").resources if r.type == DGD_TYPE]:
        jobs = {f"kubernetes:batch/v1:Job::{r.name}" for r in rendered_stack("prod").of_type("kubernetes:batch/v1:Job")}
        assert {"kubernetes:helm.sh/v3:Release::dynamo-release", "kubernetes:batch/v1:Job::model-cache-download"} | jobs <= set(dgd.depends_on)


def test_every_kubernetes_resource_uses_the_explicit_provider():
    """dev: the kubeconfig context named in config; prod: the provider built from the EKS cluster."""
    for stack, provider_name, parent in (("dev", "kubernetes", "pulumi:pulumi:Stack::nemotron-lightning-dev"),
                                         ("prod", "eks-kubernetes", "nemotron:aws:EksCluster::eks")):
        run = rendered_stack(stack)
        kube = [r for r in run.resources if r.type.startswith("kubernetes:") and r.custom]
        assert kube and {r.provider for r in kube} == {f"pulumi:providers:kubernetes::{provider_name}"}
        (provider,) = run.of_type("pulumi:providers:kubernetes")
        assert (provider.name, provider.parent) == (provider_name, parent)
    assert rendered_stack("dev").named("kubernetes").inputs["context"] == "nemotron-dev"
    assert rendered_stack("prod").named("eks-kubernetes").to_json()["inputs"]["kubeconfig"] == "[secret]"
