"""Upstream manifests -> the manifests this stack applies.

Every change to an upstream object is one of the documented stack settings below; everything else is
kept byte for byte (the conformance test holds the stack to that):

| setting                                  | what it changes                                         |
|------------------------------------------|---------------------------------------------------------|
| `kubernetes.namespace`                   | `metadata.namespace` of every namespaced object         |
| `dynamo.imagePullSecret`                 | `imagePullSecrets` of every pod (removed when unset)    |
| `dynamo.runtime.registry` / `.tag`       | the registry and tag of every runtime image             |
| `targets[].image`                        | every container image of that target                    |
| `targets[].replicas.<component>`         | that component's `replicas`                             |
| `modelCache.storageClassName` / `.size`  | the PVC's storage class and size (size unset: upstream's) |
| `modelCache.checkpoints`                 | the download Jobs' checkpoint env vars and the loop tuple of their script; a Job left without checkpoints is not run |
| `modelCache.download.*`                  | the download Jobs' `activeDeadlineSeconds` / `backoffLimit` (unset: upstream's) |
| `modelCache.prewarm.gateWorkers`         | workers get a `wait-for-prewarm` initContainer and its two volumes (`serving_stack.plan.prewarm`) |
| `dynamo.readiness.*`                     | DGD annotations `pulumi.com/waitFor: condition=Ready`, `pulumi.com/timeoutSeconds` |
| (always)                                 | every DGD pod template: annotation `nemotron.nvidia.com/config-sha256` of the ConfigMap data its pods read |
| `hfToken` unset                          | the download Job's `envFrom` of `hf-token-secret` is removed (public checkpoints) |
| `aws.modelCacheStorage.backend: fsx`     | the PVC's `spec.volumeName`: the PersistentVolume of the stack's FSx file system |
| `autoscaling.targets.<id>`               | its workers get `scalingAdapter: {enabled: true}` (`plan.stack_scaling`) |
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.config.serving import DownloadJob
from serving_stack.facts.catalog import Recipe
from serving_stack.plan.model_cache import JobCheckpoints, env_name_tuple, env_tuple_pattern


@dataclass(frozen=True)
class ServingSettings:
    """The stack-wide settings that change upstream manifests."""

    namespace: str
    image_pull_secret: Optional[str]
    registry: str
    tag: str


def runtime_image(upstream_image: str, settings: ServingSettings) -> str:
    """Keep the upstream repository name (e.g. `vllm-runtime`), swap registry and tag."""
    repository = upstream_image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]
    return f"{settings.registry}/{repository}:{settings.tag}"


def _set_pull_secret(pod_spec: dict[str, Any], secret: Optional[str]) -> None:
    if "imagePullSecrets" not in pod_spec:
        return
    if secret:
        pod_spec["imagePullSecrets"] = [{"name": secret}]
    else:
        del pod_spec["imagePullSecrets"]


def render_target(
    recipe: Recipe,
    replicas: Mapping[str, int],
    image: Optional[str],
    settings: ServingSettings,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ConfigMap and DynamoGraphDeployment of one target, as this stack applies them: `replicas` are
    the effective counts (`plan.targets`), which equal upstream's wherever the stack sets none."""
    config_map, dgd = recipe.copy_manifests()
    for manifest in (config_map, dgd):
        manifest["metadata"]["namespace"] = settings.namespace
    for component in dgd["spec"]["components"]:
        if replicas[component["name"]] != component["replicas"]:
            component["replicas"] = replicas[component["name"]]
        pod_spec = component["podTemplate"]["spec"]
        _set_pull_secret(pod_spec, settings.image_pull_secret)
        for container in pod_spec.get("containers", []):
            container["image"] = image or runtime_image(container["image"], settings)
    return config_map, dgd


def render_model_cache_pvc(
    claim: dict[str, Any], size: str, storage_class: str, settings: ServingSettings
) -> dict[str, Any]:
    """Upstream's claim; `size` is the configured size or upstream's own (`plan.model_cache`)."""
    pvc = copy.deepcopy(claim)
    pvc["metadata"]["namespace"] = settings.namespace
    pvc["spec"]["storageClassName"] = storage_class
    pvc["spec"]["resources"]["requests"]["storage"] = size
    return pvc


def render_download_job(fetch: JobCheckpoints, download: DownloadJob, settings: ServingSettings) -> dict[str, Any]:
    """An upstream download Job fetching `fetch.checkpoints` under their env names: where the stack changed
    the set, the checkpoint env entries and the loop tuple of upstream's script are rewritten, nothing else."""
    job = copy.deepcopy(fetch.job.manifest)
    job["metadata"]["namespace"] = settings.namespace
    for field in ("activeDeadlineSeconds", "backoffLimit"):
        if getattr(download, field) is not None:
            job["spec"][field] = getattr(download, field)
    pod_spec = job["spec"]["template"]["spec"]
    _set_pull_secret(pod_spec, settings.image_pull_secret)
    (container,) = pod_spec["containers"]
    container["image"] = runtime_image(container["image"], settings)
    if fetch.changed:
        upstream_names = {name for name, _ in fetch.job.checkpoints}
        env = container.get("env", [])
        first = next(i for i, e in enumerate(env) if e["name"] in upstream_names)
        others = [e for e in env if e["name"] not in upstream_names]
        selected = [{"name": name, "value": repo} for name, repo in fetch.checkpoints]
        container["env"] = others[:first] + selected + others[first:]
        loop = env_tuple_pattern([name for name, _ in fetch.job.checkpoints])
        container["args"] = [loop.sub(env_name_tuple(fetch.env_names), str(a), count=1) for a in container["args"]]
    return job


WAIT_FOR_ANNOTATION = "pulumi.com/waitFor"
TIMEOUT_ANNOTATION = "pulumi.com/timeoutSeconds"
CONFIG_CHECKSUM_ANNOTATION = "nemotron.nvidia.com/config-sha256"


def startup_budget_seconds(dgd: dict[str, Any]) -> int:
    """The longest any component may take to start before Kubernetes gives up on it (its startupProbe)."""
    budgets = [0]
    for component in dgd["spec"]["components"]:
        for container in component["podTemplate"]["spec"].get("containers", []):
            probe = container.get("startupProbe") or {}
            budgets.append(
                int(probe.get("initialDelaySeconds", 0))
                + int(probe.get("periodSeconds", 10)) * int(probe.get("failureThreshold", 3))
            )
    return max(budgets)


def await_ready(dgd: dict[str, Any], timeout_seconds: int) -> None:
    """`pulumi up` waits for the DGD's `Ready` condition (the operator sets it once every component runs)."""
    annotations = dgd["metadata"].setdefault("annotations", {})
    annotations[WAIT_FOR_ANNOTATION] = "condition=Ready"
    annotations[TIMEOUT_ANNOTATION] = str(timeout_seconds)


def stamp_config_checksum(dgd: dict[str, Any], *config_data: Mapping[str, str]) -> None:
    """A checksum of the ConfigMap data the pods read, on every pod template: a changed ConfigMap is replaced
    under the same name, and only a changed pod template makes the operator roll the pods onto it."""
    digest = hashlib.sha256(json.dumps(list(config_data), sort_keys=True).encode()).hexdigest()
    for component in dgd["spec"]["components"]:
        metadata = component["podTemplate"].setdefault("metadata", {})
        metadata.setdefault("annotations", {})[CONFIG_CHECKSUM_ANNOTATION] = digest
