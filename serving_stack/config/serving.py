"""Config blocks for the Kubernetes side of serving: cluster access, model cache, Dynamo, targets."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

import pydantic

from serving_stack.config.types import (
    AsciiText,
    Block,
    CpuQuantity,
    DnsLabel,
    FreeFormValues,
    HfRepo,
    Int32,
    Int64,
    MemorySize,
    PinnedImage,
    Registry,
    SemVer,
    StorageClassName,
    StorageSize,
    matching,
)


class ClusterAccess(Block):
    """Which cluster the Kubernetes resources go to.

    `kubeconfig`: an existing cluster through a kubeconfig file and context (never the ambient default).
    `eks`: the cluster this stack creates (see the `aws` block).
    """

    source: Literal["kubeconfig", "eks"] = "kubeconfig"
    context: Optional[str] = pydantic.Field(default=None, min_length=1)
    kubeconfigPath: Optional[str] = pydantic.Field(default=None, min_length=1)


class KubernetesConfig(Block):
    namespace: DnsLabel = "nemotron"
    cluster: ClusterAccess = ClusterAccess()


class Checkpoints(Block):
    """Which Hugging Face repos the download Jobs fetch. Unset means upstream's, as the vendored model-cache
    manifests state it: `base` is the first checkpoint of the first download Job, `drafts` that Job's
    other checkpoints; with both unset every upstream download Job runs as upstream wrote it."""

    base: Optional[HfRepo] = None
    drafts: Optional[list[HfRepo]] = None


class DownloadJob(Block):
    """The model-download Job. `activeDeadlineSeconds`, `backoffLimit` unset: the upstream Job's own values.
    `image`: the Python 3.12 image it runs in, with the pinned downloader of catalog/downloader.yaml installed
    by an init container (not the 12+ GB runtime image upstream's Job pulls to run one Python program)."""

    activeDeadlineSeconds: Optional[Int64] = pydantic.Field(default=None, ge=60, description="Kubernetes Job: int64")
    backoffLimit: Optional[Int32] = pydantic.Field(default=None, ge=0, description="Kubernetes Job: int32")
    image: PinnedImage = pydantic.Field(
        default="docker.io/library/python:3.12.8-slim",
        description="a Python 3.12 image (the downloader's wheels are cp312): pip installs them into it",
    )


class PrewarmConfig(Block):
    """Prewarm DaemonSets: read the checkpoints into each GPU node's page cache before workers load them."""

    enabled: bool = True
    gateWorkers: bool = True
    image: PinnedImage = "docker.io/library/python:3.12.8-slim"
    threads: int = pydantic.Field(default=8, ge=1, le=64)
    # Page cache is charged to the cgroup that reads it: the limit must hold every checkpoint, or the
    # kernel evicts what was just warmed. Unset: each DaemonSet's limit is computed from the sizes of the
    # checkpoints its pods read (catalog/checkpoints.yaml); set, it applies to every DaemonSet and is
    # checked against them. Requests stay small so the DaemonSet never blocks scheduling.
    memoryLimit: Optional[MemorySize] = None
    cpuLimit: CpuQuantity = "2"
    waitTimeoutSeconds: int = pydantic.Field(default=900, ge=0, le=7200)


class ModelCacheConfig(Block):
    """`retainOnDelete`: `pulumi destroy` forgets the claim and the serving namespace instead of deleting
    them (deleting the namespace would delete the claim with it), so the cached checkpoints survive. With a
    file system the stack creates (`aws.modelCacheStorage`), the data lives outside the namespace anyway."""

    storageClassName: StorageClassName
    size: Optional[StorageSize] = None  # unset: the upstream claim's, raised to hold the checkpoints downloaded
    checkpoints: Checkpoints = Checkpoints()
    download: DownloadJob = DownloadJob()
    prewarm: PrewarmConfig = PrewarmConfig()
    retainOnDelete: bool = False
    mountsInLocalZones: bool = pydantic.Field(
        default=False,
        description="the storage class (one this stack does not create) mounts on Local Zone nodes, as FSx for "
        "Lustre does and EFS does not; required for a managed Local Zone pool without aws.modelCacheStorage",
    )


class PlatformConfig(Block):
    """The `dynamo-platform` Helm chart, installed from its NGC tarball (the operator applies the CRDs).

    `chartVersion` unset means the version pinned in `catalog/platform.yaml`."""

    install: bool = pydantic.Field(default=True, description="false: the cluster already runs the platform")
    chartVersion: Optional[SemVer] = None
    namespace: DnsLabel = "dynamo-system"
    releaseName: DnsLabel = "dynamo-platform"
    values: FreeFormValues = pydantic.Field(default_factory=dict)


class RuntimeImage(Block):
    """Where the Dynamo runtime images come from; the repository name per backend comes from the recipe."""

    registry: Registry = "nvcr.io/nvidia/ai-dynamo"
    tag: SemVer = "1.5.0-nemotron-3.5-lightning-dev.1"


class Readiness(Block):
    """`pulumi up` waits until every DGD reports `Ready` (`pulumi.com/waitFor`), at most `timeoutSeconds`
    (unset: image pull plus the workers' own startupProbe budget, so the wait never expires first)."""

    wait: bool = True
    timeoutSeconds: Optional[int] = pydantic.Field(default=None, ge=60, le=4 * 3600)


class DynamoConfig(Block):
    """`imagePullSecret`: the name of the `kubernetes.io/dockerconfigjson` Secret the stack creates in the
    serving namespace from the `ngcApiKey` secret (the namespace is the stack's, so it cannot exist before);
    unset for public images."""

    platform: PlatformConfig = PlatformConfig()
    runtime: RuntimeImage = RuntimeImage()
    imagePullSecret: Optional[DnsLabel] = None
    registry: Annotated[str, matching(r"[a-z0-9.-]+(:[0-9]+)?", "a registry host such as nvcr.io")] = "nvcr.io"
    readiness: Readiness = Readiness()
    # How a change of targets reaches the GPUs: `two-step` refuses a swap that one `pulumi up` cannot finish
    # on full pools (serving_stack.plan.serving.swap_refusal); `surge`: the pools have room for both.
    targetSwap: Literal["two-step", "surge"] = "two-step"
    # How long `pulumi up`/`destroy` waits for a deleted DGD to be gone (the operator removes its finalizer
    # once the component Deployments are deleted). Without it the provider would wait the DGD's readiness
    # timeout (pulumi.com/timeoutSeconds applies to deletion too) when the operator is absent.
    deleteTimeoutSeconds: int = pydantic.Field(default=600, ge=30, le=3600)


class TargetConfig(Block):
    """A catalog target to serve, with the settings a stack may change about it.

    `acceptanceLength`: the mean acceptance length of speculative decoding on your traffic (tokens emitted per
    decode step per request, draft tokens accepted plus one; vLLM's spec-decode metrics report it). The
    published figures of speculative targets were measured with synthetic rejection sampling at a fixed
    acceptance length (the catalog's `syntheticAcceptanceLength`, upstream's expected value per method:
    catalog/recipes/vllm/README.md, "Synthetic acceptance configuration"); unset, the figures are shown at that
    length and say so; set, expected tok/s, tok/s/user and $/1M tokens are scaled by it over the synthetic
    one (first order: decode tokens per step at a fixed draft count). At most the target's draft tokens + 1."""

    id: AsciiText
    replicas: dict[str, Annotated[int, pydantic.Field(ge=0, le=64)]] = pydantic.Field(default_factory=dict)
    image: Optional[PinnedImage] = None
    nodePool: Optional[DnsLabel] = None
    acceptanceLength: Optional[float] = pydantic.Field(default=None, ge=1)


def _target_list(value: Any, _handler: Any) -> Any:
    """The list validated on its own, so that errors name `targets[0].id`, not the annotated type."""
    if not isinstance(value, list):
        raise ValueError("must be a list of targets")
    return _TARGET_LIST.validate_python(value, strict=True)


_TARGET_LIST = pydantic.TypeAdapter(list[TargetConfig])
Targets = Annotated[list[TargetConfig], pydantic.WrapValidator(_target_list)]
