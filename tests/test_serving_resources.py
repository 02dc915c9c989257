"""What the committed dev and prod stacks register on the Kubernetes side, value by value."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path

import pytest
import yaml
from sagemaker_helpers import unsecret
from stack_helpers import (
    BASE_CONFIG,
    DGD_TYPE,
    TEST_SECRETS,
    assert_rejected_before_any_resource,
    rendered_stack,
    run_config,
    stack_file_config,
)

from serving_stack.config.serving import PrewarmConfig, TargetConfig
from serving_stack.facts.catalog import load_catalog, load_platform
from serving_stack.plan.model_cache import env_name_tuple
from serving_stack.plan.serving import effective_replicas, gpus_used, startup_budget_seconds

pytestmark = pytest.mark.catalog_driven


def _inputs(stack: str, type_token: str) -> list[dict]:
    return [r.inputs for r in rendered_stack(stack).resources if r.type == type_token]


def _download_jobs(stack: str) -> list[dict]:
    """The stack's Jobs but the smoke tests (docs/operability-programs.md)."""
    return [
        r.inputs
        for r in rendered_stack(stack).resources
        if r.type == "kubernetes:batch/v1:Job" and not r.parent.startswith("nemotron:kubernetes:Operability::")
    ]


def test_dev_is_one_single_gpu_aggregated_target():
    run = rendered_stack("dev")
    dev = stack_file_config("dev")
    (target,) = dev["targets"]
    name = load_catalog().recipe(target["id"]).name
    (dgd,) = _inputs("dev", DGD_TYPE)
    # image pull allowance + the prewarm gate (workers wait for the download and a warm node; created before
    # the download ends, the graph may wait out the download Job's deadline) + the workers' startupProbe budget
    (job,) = _download_jobs("dev")
    budget = (
        load_platform().readiness.imagePullAllowanceSeconds
        + PrewarmConfig().waitTimeoutSeconds
        + int(job["spec"]["activeDeadlineSeconds"])
        + startup_budget_seconds(dgd)
    )
    assert dgd["metadata"] == {
        "name": name,
        "namespace": dev["kubernetes"]["namespace"],
        "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "dynamo"},
        "annotations": {"pulumi.com/waitFor": "condition=Ready", "pulumi.com/timeoutSeconds": str(budget)},
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
        assert endpoints[target["id"]]["expectedOutputTokensPerSecond"] == (
            None if per_gpu is None else round(per_gpu * gpus, 2)
        )


def test_hf_token_secret_and_pull_secret_exist_only_when_configured():
    run = run_config({**BASE_CONFIG, "dynamo": {"imagePullSecret": "ngc-registry"}})
    secrets = {r.name: r.to_json()["inputs"] for r in run.resources if r.type == "kubernetes:core/v1:Secret"}
    assert secrets["serving-hf-token"]["metadata"] == {"name": "hf-token-secret", "namespace": "nemotron-test"}
    assert secrets["serving-hf-token"]["stringData"] == {"HF_TOKEN": "[secret]"}
    pull = secrets["serving-pull-secret"]
    assert (pull["type"], pull["metadata"]["name"]) == ("kubernetes.io/dockerconfigjson", "ngc-registry")
    (dgd,) = [r for r in run.resources if r.type == DGD_TYPE]
    pulls = {str(c["podTemplate"]["spec"]["imagePullSecrets"]) for c in dgd.inputs["spec"]["components"]}
    assert pulls == {"[{'name': 'ngc-registry'}]"}
    # The pods reference the Secret by name only: they are ordered after it explicitly.
    assert "kubernetes:core/v1:Secret::serving-pull-secret" in dgd.depends_on
    assert not [r for r in rendered_stack("dev").resources if r.type == "kubernetes:core/v1:Secret"]


def test_the_pull_secret_is_built_from_the_ngc_key():
    run = run_config({**BASE_CONFIG, "dynamo": {"imagePullSecret": "ngc-registry"}})
    (pull,) = [r for r in run.resources if r.name == "serving-pull-secret"]
    config = json.loads(unsecret(pull.inputs)["stringData"][".dockerconfigjson"])
    auth = config["auths"]["nvcr.io"]
    assert (auth["username"], auth["password"]) == ("$oauthtoken", TEST_SECRETS["ngcApiKey"])
    assert base64.b64decode(auth["auth"]).decode() == f"$oauthtoken:{TEST_SECRETS['ngcApiKey']}"


def test_a_pull_secret_without_the_key_is_refused_before_any_resource():
    assert_rejected_before_any_resource(
        {**BASE_CONFIG, "dynamo": {"imagePullSecret": "ngc-registry"}},
        "ngcApiKey: required when dynamo.imagePullSecret is set",
        secrets={"hfToken": "hf_x"},
    )


def test_model_cache_pvc_and_download_jobs():
    """prod (`checkpoints` unset) runs, as upstream wrote them, the upstream download Jobs that fetch a checkpoint
    its targets load; dev (`drafts: []`) only the base, under upstream's env name, with the script's loop
    rewritten to it."""
    catalog = load_catalog()
    cache = catalog.model_cache
    prod = stack_file_config("prod")
    (pvc,) = _inputs("prod", "kubernetes:core/v1:PersistentVolumeClaim")
    class_name = prod["modelCache"]["storageClassName"]
    assert pvc["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": prod["modelCache"]["size"]}},
        "storageClassName": class_name,
        "volumeName": f"{class_name}-model-cache",
    }
    loaded = {repo for t in prod["targets"] for repo in catalog.recipe(t["id"]).checkpoints}
    used = [job for job in cache.jobs if loaded & set(job.repos)]
    prod_jobs = {job["metadata"]["name"]: job for job in _download_jobs("prod")}
    assert sorted(prod_jobs) == sorted(job.name for job in used)
    for job in used:
        container = prod_jobs[job.name]["spec"]["template"]["spec"]["containers"][0]
        assert [(e["name"], e["value"]) for e in container["env"] if e["name"] in dict(job.checkpoints)] == list(
            job.checkpoints
        )
        (script,) = container["args"]
        assert script.startswith(job.container["args"][0])  # then the check that marks each checkpoint downloaded
    base = cache.jobs[0].repos[0]
    base_env = next(name for job in cache.jobs for name, repo in job.checkpoints if repo == base)
    (job,) = _download_jobs("dev")
    container = job["spec"]["template"]["spec"]["containers"][0]
    upstream_names = {name for upstream in cache.jobs for name, _ in upstream.checkpoints}
    assert [e for e in container["env"] if e["name"] in upstream_names] == [{"name": base_env, "value": base}]
    assert f"for env_name in {env_name_tuple([base_env])}:" in container["args"][0]
    assert "envFrom" not in container  # no hfToken in dev: public checkpoints


def test_prod_keeps_the_model_cache_in_its_protected_file_system():
    """The claim is bound to a Retain volume of the stack's FSx file system, which alone is protected."""
    run = rendered_stack("prod")
    (fsx,) = run.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    (volume,) = run.of_type("kubernetes:core/v1:PersistentVolume")
    (pvc,) = run.of_type("kubernetes:core/v1:PersistentVolumeClaim")
    assert fsx.protect and not volume.protect and not pvc.protect
    assert volume.inputs["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert volume.inputs["spec"]["csi"]["volumeHandle"] == f"{fsx.name}-id"
    assert volume.inputs["spec"]["claimRef"] == {"namespace": "nemotron", "name": "shared-model-cache"}
    assert pvc.inputs["spec"]["volumeName"] == volume.inputs["metadata"]["name"]
    assert not run.of_type("kubernetes:storage.k8s.io/v1:StorageClass")


def test_retain_on_delete_keeps_the_claim_with_its_namespace():
    """Deleting a namespace deletes the claims in it, so retaining the claim alone would keep nothing."""
    run = run_config({**BASE_CONFIG, "modelCache": {"storageClassName": "efs-ap", "retainOnDelete": True}})
    assert run.named("model-cache-pvc").retain_on_delete and run.named("serving-namespace").retain_on_delete
    assert not run.named("model-cache-pvc").protect


def test_dev_leaves_the_shared_clusters_dynamo_platform_alone():
    assert not rendered_stack("dev").of_type("kubernetes:helm.sh/v3:Release")


def test_dynamo_platform_release_is_pinned_and_targets_wait_for_it_not_for_the_download():
    release = rendered_stack("prod").named("dynamo-release").inputs
    chart = load_platform().chart
    assert release["chart"] == chart.url.format(version=chart.version)
    assert release["namespace"] == "dynamo-system" and release["name"] == "dynamo-platform"
    assert release["values"]["dynamo-operator"]["upgradeCRD"] is True
    assert release["values"]["global"]["nats"] == {"install": False}
    for dgd in [r for r in rendered_stack("prod").resources if r.type == DGD_TYPE]:
        jobs = {
            f"kubernetes:batch/v1:Job::{r.name}"
            for r in rendered_stack("prod").of_type("kubernetes:batch/v1:Job")
            if not r.parent.startswith("nemotron:kubernetes:Operability::")
        }  # the download Jobs: the gated workers wait for them in their pods (tests/test_download_gate.py)
        assert "kubernetes:helm.sh/v3:Release::dynamo-release" in dgd.depends_on
        assert jobs and not jobs & set(dgd.depends_on)


def test_every_kubernetes_resource_uses_the_explicit_provider():
    """dev: the kubeconfig context named in config; prod: the provider built from the EKS cluster."""
    for stack, provider_name, parent in (
        ("dev", "kubernetes", "pulumi:pulumi:Stack::nemotron-lightning-dev"),
        ("prod", "eks-kubernetes", "nemotron:aws:EksCluster::eks"),
    ):
        run = rendered_stack(stack)
        kube = [r for r in run.resources if r.type.startswith("kubernetes:") and r.custom]
        assert kube and {r.provider for r in kube} == {f"pulumi:providers:kubernetes::{provider_name}"}
        (provider,) = run.of_type("pulumi:providers:kubernetes")
        assert (provider.name, provider.parent) == (provider_name, parent)
    assert rendered_stack("dev").named("kubernetes").inputs["context"] == "nemotron-dev"
    assert rendered_stack("prod").named("eks-kubernetes").to_json()["inputs"]["kubeconfig"] == "[secret]"


def test_a_namespace_the_cluster_owns_is_never_created():
    """`kubernetes.createNamespace: false`: the stack registers no Namespace (pulumi-kubernetes >= 4.29 would
    refuse to create it, and adopting it would delete the admin's namespace on destroy), yet puts every
    namespaced object of its own into it."""
    dev = stack_file_config("dev")
    namespace = dev["kubernetes"]["namespace"]
    created = run_config(dev).resources
    run = run_config({**dev, "kubernetes": {**dev["kubernetes"], "createNamespace": False}})
    namespaces = [r for r in created if r.type == "kubernetes:core/v1:Namespace"]
    assert [r.inputs["metadata"]["name"] for r in namespaces] == [namespace]
    assert sorted((r.type, r.name) for r in run.resources) == sorted(
        (r.type, r.name) for r in created if r not in namespaces
    )
    placed = {r.inputs["metadata"].get("namespace") for r in run.resources if r.type.startswith("kubernetes:")}
    assert placed - {None} == {namespace}


def test_the_cluster_namespace_is_judged_at_the_level_the_config_states():
    """`kubernetes.namespacePodSecurity` states the cluster namespace's enforced level: the policy pack judges the
    stack's pods at it (the RDMA workers and prewarm need `privileged`, which the pack's default `baseline`
    refuses), a level stated by another component is reported, and it is refused with `createNamespace: true`."""
    from policy_helpers import POLICY, evaluate

    dev = stack_file_config("dev")
    rule = [POLICY["pod-security-standards"]]

    def judged(**kubernetes: object) -> list[str]:
        run = run_config({**dev, "kubernetes": {**dev["kubernetes"], "createNamespace": False, **kubernetes}})
        return [v.message for v in evaluate(list(run.resources), stack="dev", policies=rule)]

    unstated, baseline = judged(), judged(namespacePodSecurity="baseline")
    assert unstated and unstated == baseline and all(" breaks the baseline " in m for m in unstated)
    assert judged(namespacePodSecurity="privileged") == []
    run = run_config({**dev, "kubernetes": {**dev["kubernetes"], "createNamespace": False}})
    other = copy.deepcopy(next(r for r in run.resources if r.type.endswith(":ServingNamespace")))
    other.type, other.urn = "nemotron:kubernetes:Operability", other.urn.replace("ServingNamespace", "Operability")
    other.inputs = {"existingNamespace": {"name": dev["kubernetes"]["namespace"], "enforce": "privileged"}}
    reported = [v.message for v in evaluate([*run.resources, other], stack="dev", policies=rule)]
    assert any("Operability states that namespace" in m for m in reported), reported
    assert_rejected_before_any_resource(
        {**dev, "kubernetes": {**dev["kubernetes"], "namespacePodSecurity": "privileged"}},
        "only with createNamespace: false",
    )
