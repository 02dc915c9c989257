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
    LabelValue,
    MemorySize,
    PinnedImage,
    QualifiedName,
    Registry,
    SemVer,
    StorageClassName,
    StorageSize,
    VersionedImage,
    matching,
)


class ClusterAccess(Block):
    """Which cluster the Kubernetes resources go to (never the kubeconfig's ambient default)."""

    source: Literal["kubeconfig", "eks"] = "kubeconfig"
    """`kubeconfig`: an existing cluster through `kubeconfigPath` and `context`; `eks`: the cluster the `aws`
    block creates (`aws.cluster.create`)."""
    context: Optional[str] = pydantic.Field(default=None, min_length=1)
    """The kubeconfig context of an existing cluster; unset: the current context of `kubeconfigPath`, which is
    then required (a `kubeconfig` source names one or both: never the ambient kubeconfig's current context)."""
    kubeconfigPath: Optional[str] = pydantic.Field(default=None, min_length=1)
    """The kubeconfig file of an existing cluster; unset: the Kubernetes provider's default (`KUBECONFIG`)."""


class NodeTaint(Block):
    """A taint as `kubectl get node -o yaml` shows it (Kubernetes core/v1 Taint)."""

    key: QualifiedName
    """The taint's key, such as `nvidia.com/gpu`."""
    value: LabelValue = ""
    """Its value; empty: a taint without one (`nvidia.com/gpu:NoSchedule`), which an `Equal` toleration with a
    value does not match."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    """Its effect."""


class GpuNodeShape(Block):
    """One shape of GPU node an existing cluster runs: what its scheduler sees of such a node."""

    count: int = pydantic.Field(default=1, ge=1, le=450)
    """How many nodes of this shape (450: EKS's default quota of nodes per managed node group)."""
    labels: dict[QualifiedName, LabelValue] = pydantic.Field(default_factory=dict)
    """The node's labels that workloads select on (instance type, `nvidia.com/gpu.product`, pool labels)."""
    taints: list[NodeTaint] = pydantic.Field(default_factory=list)
    """The node's taints."""
    resources: dict[QualifiedName, Annotated[int, pydantic.Field(ge=1, le=1024)]]
    """Its allocatable extended resources, as its device plugins advertise them (`nvidia.com/gpu`,
    `vpc.amazonaws.com/efa`, `rdma/ib`)."""


class KubernetesConfig(Block):
    """Where the serving workloads go."""

    namespace: DnsLabel = "nemotron"
    """The namespace of the targets, the model cache and the gateway."""
    createNamespace: bool = True
    """true: the stack creates `namespace` and deletes it on destroy (a namespace that already exists fails the
    first `up` with `already exists`: pulumi-kubernetes >= 4.29 never adopts it); false: the namespace is the
    cluster's (a cluster admin made it, with a Pod Security level that admits the workers: `privileged` for RDMA
    workers and the prewarm DaemonSet), the stack only puts its objects in it and leaves it on destroy."""
    namespacePodSecurity: Optional[Literal["privileged", "baseline", "restricted"]] = None
    """With `createNamespace: false`: the Pod Security level the cluster's namespace enforces (its
    `pod-security.kubernetes.io/enforce` label as its admin set it), which the policy pack judges the stack's
    pods by; unset: the pack's `defaultLevel` (`baseline`, which refuses RDMA workers and the prewarm)."""
    cluster: ClusterAccess = ClusterAccess()
    """The cluster they run on."""
    gpuNodes: Optional[list[GpuNodeShape]] = pydantic.Field(default=None, min_length=1, max_length=64)
    """The GPU nodes of an existing cluster (`cluster.source: kubeconfig`), for the checks that run without AWS
    (`make preflight`, `make e2e`); unset: one node as an EKS managed node group of the EKS-optimized NVIDIA
    AMI runs it with the NVIDIA device plugin and GPU Feature Discovery (`catalog/eks_nodes.yaml` `gpuNodes`)."""

    @pydantic.field_validator("namespacePodSecurity")
    @classmethod
    def _level_of_an_existing_namespace(cls, level: Optional[str], info: pydantic.ValidationInfo) -> Optional[str]:
        if level is not None and info.data.get("createNamespace") is True:
            raise ValueError("states an existing namespace's level: only with createNamespace: false")
        return level

    @pydantic.field_validator("gpuNodes")
    @classmethod
    def _nodes_of_an_existing_cluster(cls, nodes: Optional[list[GpuNodeShape]], info: pydantic.ValidationInfo) -> Any:
        cluster = info.data.get("cluster")
        if nodes is not None and cluster is not None and cluster.source == "eks":
            raise ValueError(
                "describes an existing cluster's nodes: only with cluster.source: kubeconfig (a created "
                "cluster's nodes are its aws.nodePools)"
            )
        return nodes


class Checkpoints(Block):
    """Which Hugging Face repos the download Jobs fetch; with both unset every upstream download Job whose
    checkpoints a selected target loads runs as upstream wrote it."""

    base: Optional[HfRepo] = None
    """The base checkpoint; unset: the first checkpoint of the first upstream download Job."""
    drafts: Optional[list[HfRepo]] = None
    """Draft checkpoints for speculative decoding; unset: that Job's other checkpoints."""


class DownloadJob(Block):
    """The model-download Jobs (Kubernetes Job), run on a small Python image with the pinned downloader of
    catalog/downloader.yaml instead of upstream's 12+ GB runtime image."""

    activeDeadlineSeconds: Optional[Int64] = pydantic.Field(default=None, ge=60)
    """Seconds a Job may run before it fails (Kubernetes Job activeDeadlineSeconds); unset: upstream's."""
    backoffLimit: Optional[Int32] = pydantic.Field(default=None, ge=0)
    """Retries before a Job fails (Kubernetes Job backoffLimit); unset: upstream's."""
    image: PinnedImage = "docker.io/library/python:3.12.8-slim"
    """A Python 3.12 image (the downloader's wheels are cp312), pinned by version tag or digest."""


class PrewarmConfig(Block):
    """Prewarm DaemonSets: read the checkpoints into each GPU node's page cache before workers load them."""

    enabled: bool = True
    """Run one prewarm DaemonSet per distinct worker placement."""
    gateWorkers: bool = True
    """Workers wait (at most `waitTimeoutSeconds`) in an init container until their checkpoints are downloaded
    and their node is warm; their pods then start, and pull their image, while the download runs. false: the
    graphs are created only once the download Jobs are complete."""
    image: PinnedImage = "docker.io/library/python:3.12.8-slim"
    """The image the prewarm program runs in (Python 3), pinned."""
    threads: int = pydantic.Field(default=8, ge=1, le=64)
    """Parallel readers per node."""
    memoryLimit: Optional[MemorySize] = None
    """Memory limit of every prewarm pod (page cache counts against it, so it must hold what the pod warms);
    unset: per DaemonSet, the checkpoints it reads (catalog/checkpoints.yaml) plus 2Gi."""
    cpuLimit: CpuQuantity = "2"
    """CPU limit of every prewarm pod (Kubernetes quantity)."""
    waitTimeoutSeconds: int = pydantic.Field(default=900, ge=0, le=7200)
    """Seconds a gated worker waits for its checkpoints' download and its node to be warm (on a first `up`,
    from its image pulled, so it must cover the rest of the download); then it loads cold if downloaded, else
    its init container fails and the kubelet retries it."""
    prePullImages: bool = True
    """Beside each prewarm DaemonSet, one that pulls the workers' images onto each node of that placement from
    the node's registration (an init container per image, then a pause container), so the workers' own pull,
    once the GPUs are advertised and their graph exists, is a cache hit. false: each worker pulls its image."""

    @property
    def gates_workers(self) -> bool:
        """Workers wait in an init container for the download and the prewarm (not for `up` to order them)."""
        return self.enabled and self.gateWorkers


class ModelCacheConfig(Block):
    """The ReadWriteMany model cache every worker mounts, filled by the download Jobs."""

    storageClassName: StorageClassName
    """The claim's StorageClass: an RWX class of the cluster's, or the one `aws.modelCacheStorage` creates."""
    size: Optional[StorageSize] = None
    """The claim's size; unset: upstream's, raised to hold the checkpoints downloaded (catalog/checkpoints.yaml)."""
    checkpoints: Checkpoints = Checkpoints()
    """Which checkpoints the download Jobs fetch."""
    download: DownloadJob = DownloadJob()
    """The download Jobs."""
    prewarm: PrewarmConfig = PrewarmConfig()
    """The prewarm DaemonSets."""
    retainOnDelete: bool = False
    """`pulumi destroy` forgets the claim and the serving namespace instead of deleting them, so the cached
    checkpoints survive (a file system the stack creates lives outside the namespace anyway)."""
    mountsInLocalZones: bool = False
    """The storage class (one this stack does not create) mounts on Local Zone nodes, as FSx for Lustre does and
    EFS does not; required for a managed Local Zone pool without `aws.modelCacheStorage`."""


class PlatformConfig(Block):
    """The `dynamo-platform` Helm chart, installed from its NGC tarball (the operator applies the CRDs)."""

    install: bool = True
    """Install it; false where the cluster already runs the platform."""
    chartVersion: Optional[SemVer] = None
    """The chart version; unset: the one pinned in catalog/platform.yaml."""
    namespace: DnsLabel = "dynamo-system"
    """The namespace the stack creates for the operator."""
    releaseName: DnsLabel = "dynamo-platform"
    """The Helm release name (its cluster-scoped objects are named after it)."""
    values: FreeFormValues = pydantic.Field(default_factory=dict)
    """Helm values merged over catalog/platform.yaml's (and monitoring's); unset: none."""


class RuntimeImage(Block):
    """Where the Dynamo runtime images come from; the repository name per backend comes from the recipe."""

    registry: Registry = "nvcr.io/nvidia/ai-dynamo"
    """The registry path every runtime image is pulled from."""
    tag: SemVer = "1.5.0-nemotron-3.5-lightning-dev.1"
    """The tag of every runtime image."""


class Readiness(Block):
    """How `pulumi up` waits for the DynamoGraphDeployments (Pulumi Kubernetes `pulumi.com/waitFor`)."""

    wait: bool = True
    """Wait until every DGD reports `Ready`."""
    timeoutSeconds: Optional[int] = pydantic.Field(default=None, ge=60, le=4 * 3600)
    """Seconds to wait at most; unset: the image pull allowance, the prewarm gate and the workers' startupProbe
    budget, so the wait never expires first (a shorter value is refused)."""


class DynamoConfig(Block):
    """The Dynamo platform and how the serving targets reach the GPUs."""

    platform: PlatformConfig = PlatformConfig()
    """The platform's Helm release."""
    runtime: RuntimeImage = RuntimeImage()
    """The runtime images."""
    imagePullSecret: Optional[DnsLabel] = None
    """The `kubernetes.io/dockerconfigjson` Secret the stack creates in the serving namespace from the `ngcApiKey`
    secret, used by every pod; unset: public images."""
    registry: Annotated[str, matching(r"[a-z0-9.-]+(:[0-9]+)?", "a registry host such as nvcr.io")] = "nvcr.io"
    """The registry host the pull Secret authenticates to."""
    readiness: Readiness = Readiness()
    """How `pulumi up` waits for the graphs."""
    targetSwap: Literal["two-step", "surge"] = "two-step"
    """`two-step` refuses a change of targets one `pulumi up` cannot finish on full pools (the engine deletes the
    old target only after the new one is Ready); `surge`: the pools have room for both."""
    deleteTimeoutSeconds: int = pydantic.Field(default=600, ge=30, le=3600)
    """Seconds `pulumi up`/`destroy` waits for a deleted DGD to be gone (the operator drops its finalizer once
    the component Deployments are deleted)."""


class TargetConfig(Block):
    """A catalog target to serve, with what a stack may change about it."""

    id: AsciiText
    """A target id of catalog/targets.yaml (current or retired), e.g. `vllm/agg-h200-dspark`."""
    replicas: dict[str, Annotated[int, pydantic.Field(ge=0, le=64)]] = pydantic.Field(default_factory=dict)
    """Replicas per DGD component name (Dynamo DGD spec.components[].replicas); unset: the recipe's."""
    image: Optional[VersionedImage] = None
    """The image of every container of the target, with a semver tag (the Dynamo operator admits a graph by
    the runtime version in its tag); unset: the runtime registry and tag (`dynamo.runtime`)."""
    nodePool: Optional[DnsLabel] = None
    """The `aws.nodePools` pool it runs on; unset: the only pool with the target's GPU."""
    acceptanceLength: Optional[float] = pydantic.Field(default=None, ge=1)
    """Mean acceptance length of speculative decoding on your traffic (draft tokens accepted + 1, from vLLM's
    spec-decode metrics), at most the target's draft tokens + 1; expected tok/s and $/1M are scaled by it over
    the catalog's synthetic one; unset: shown at the synthetic length, and said so."""


def _target_list(value: Any, _handler: Any) -> Any:
    """The list validated on its own, so that errors name `targets[0].id`, not the annotated type."""
    if not isinstance(value, list):
        raise ValueError("must be a list of targets")
    return _TARGET_LIST.validate_python(value, strict=True)


_TARGET_LIST = pydantic.TypeAdapter(list[TargetConfig])
Targets = Annotated[list[TargetConfig], pydantic.WrapValidator(_target_list)]
