"""What the committed dev and prod stacks register on the Kubernetes side, value by value."""
from __future__ import annotations

from stack_helpers import DGD_TYPE, rendered_stack


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


def test_prod_spans_h200_and_b200_with_kv_router_and_disaggregation():
    endpoints = {e["id"]: e for e in rendered_stack("prod").outputs["endpoints"]}
    assert {"vllm/agg-b200-dspark-kv-router", "vllm/disagg-h200-dflash", "vllm/agg-h200-dspark"} <= set(endpoints)
    assert endpoints["vllm/agg-b200-dspark-kv-router"]["gpus"] == 4
    assert endpoints["vllm/disagg-h200-dflash"]["gpus"] == 3  # 1 prefill + 2 decode (stack override)
    assert endpoints["vllm/disagg-h200-dflash"]["expectedOutputTokensPerSecond"] == round(1277.86 * 3, 2)


def test_hf_token_secret_and_pull_secret():
    (secret,) = [r for r in rendered_stack("dev").resources if r.type == "kubernetes:core/v1:Secret"]
    assert secret.to_json()["inputs"]["metadata"] == {"name": "hf-token-secret", "namespace": "nemotron-dev"}
    assert secret.to_json()["inputs"]["stringData"] == {"HF_TOKEN": "[secret]"}
    (dgd,) = _inputs("dev", DGD_TYPE)
    assert {str(c["podTemplate"]["spec"]["imagePullSecrets"]) for c in dgd["spec"]["components"]} == {"[{'name': 'ngc-registry'}]"}


def test_model_cache_pvc_and_download_job():
    (pvc,) = _inputs("prod", "kubernetes:core/v1:PersistentVolumeClaim")
    assert pvc["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1200Gi"}}, "storageClassName": "fsx-lustre"}
    (job,) = _inputs("dev", "kubernetes:batch/v1:Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert [e for e in container["env"] if e["name"].endswith("_MODEL")] == [
        {"name": "BASE_MODEL", "value": "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"}
    ]
    assert 'for env_name in ("BASE_MODEL",):' in container["args"][0]
    assert container["envFrom"] == [{"secretRef": {"name": "hf-token-secret"}}]
    (prod_job,) = _inputs("prod", "kubernetes:batch/v1:Job")
    assert 'for env_name in ("BASE_MODEL", "DFLASH_MODEL", "DSPARK_MODEL"):' in prod_job["spec"]["template"]["spec"]["containers"][0]["args"][0]


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
        assert {"kubernetes:helm.sh/v3:Release::dynamo-release", "kubernetes:batch/v1:Job::model-cache-download"} <= set(dgd.depends_on)


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
