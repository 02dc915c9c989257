"""How long each step takes, from the durations table (`catalog/durations.yaml`) and the recorded inputs: the
checkpoints a pod downloads or reads (sizes: catalog/checkpoints.yaml), the images it pulls and how its nodes
get them (workloads.py), how a claim binds (volumes.py), a Job's deadline, a worker's startup budget,
whether its compilation cache is shared, where a SageMaker model reads its weights from.

`work()` is one resource's own work on the first-`up` timeline; `serving_parts()` breaks a GPU worker's start
into its steps (device plugins, image pull, prewarm, model load, engine start), which the timeline and the
new-node path lay out as they overlap: steps compose in sequence (`Seq`), or in parallel (`Par`) where they
overlap as they happen (the longest branch decides when what follows starts); `layout()` places every step in
time and marks the critical ones. A step computed from figures (bytes over a rate) is `derived` when every input
is sourced and an `estimate` when any is; its source names each input.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Union

from serving_stack.facts.catalog import load_checkpoint_sizes
from serving_stack.facts.durations import Kind, Rate, Step
from tools.rollout.graph import HELM_RELEASE, Resource, StackGraph, lookup
from tools.rollout.rules import Rules, Span
from tools.rollout.volumes import binding, static_volume
from tools.rollout.workloads import (
    NODE_GROUP,
    Delivery,
    containers,
    gpu_node_groups,
    image_delivery,
    images,
    mounted_claims,
    node_groups_of,
    pod_specs,
    waits_for_prewarm,
)

# The steps of catalog/durations.yaml this model names (tests/test_durations_table.py: each exists, each is used).
AWS_API_CALL = "aws-api-call"
KUBERNETES_WRITE = "kubernetes-object-write"
CPU_NODE_GROUP = "cpu-node-group-create"
GPU_NODE_BOOT = "gpu-node-boot"
DEVICE_PLUGINS = "device-plugins-advertise"
AUTOSCALER = "autoscaler-reaction"
HELM_INSTALL = "helm-release-install"
CHART_STEPS = {"kube-prometheus-stack": "kube-prometheus-stack-install"}
IMAGE_FROM_SNAPSHOT = "image-pull-ebs-snapshot"
PIP_INSTALL = "pip-install-downloader"
SMOKE_TEST = "smoke-test-run"
ENGINE_START = {
    ("vllm", False): "engine-start-vllm-cold",
    ("vllm", True): "engine-start-vllm-warm",
    ("trtllm", False): "engine-start-trtllm-cold",
    ("trtllm", True): "engine-start-trtllm-warm",
}
DEFAULT_BACKEND = "vllm"
# The SageMaker vLLM container is not known to ship flashinfer's prebuilt kernels (the Dynamo images do).
SAGEMAKER_ENGINE = "engine-start-vllm-cold-flashinfer-jit"
SAGEMAKER_INSTANCE = "sagemaker-instance-start"
SAGEMAKER_PULL = "sagemaker-image-pull"
SAGEMAKER_PULL_CACHED = "sagemaker-image-pull-cached"
HUB_DOWNLOAD, PAGE_CACHE, NODE_READ_CAP, EFS_READ, S3_DOWNLOAD = (
    "hub-download",
    "page-cache-read",
    "node-read-cap",
    "efs-elastic-read",
    "sagemaker-s3-download",
)

SAGEMAKER_ENDPOINT = "aws:sagemaker/endpoint:Endpoint"
SAGEMAKER_CONFIG = "aws:sagemaker/endpointConfiguration:EndpointConfiguration"
SAGEMAKER_MODEL = "aws:sagemaker/model:Model"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
EFS = "aws:efs/fileSystem:FileSystem"
ZERO = Span(0.0, 0.0, "no cloud work")


def combined_kind(kinds: Iterable[Kind]) -> Kind:
    """An estimate if any input is one; a single measured input stays measured; otherwise derived."""
    listed = list(kinds)
    if "estimate" in listed:
        return "estimate"
    return "measured" if listed == ["measured"] else "derived"


@dataclass(frozen=True)
class Part:
    """One step: its typical and worst duration (seconds), its kind and source."""

    name: str
    seconds: float
    worst_seconds: float
    kind: Kind
    source: str

    @classmethod
    def of(cls, name: str, step: Step) -> Part:
        return cls(name, step.seconds, step.worst, step.kind, step.source)

    @property
    def estimated(self) -> bool:
        return self.kind == "estimate"


@dataclass(frozen=True)
class Size:
    """GB of data, what kind of figure that is and where it comes from."""

    gigabytes: float
    kind: Kind
    source: str


def transfer(name: str, size: Size, rate: Rate) -> Part:
    """Moving `size` at a rate (MB/s)."""
    return Part(
        name,
        size.gigabytes * 1000 / rate.mbPerSecond,
        size.gigabytes * 1000 / rate.worst,
        combined_kind([size.kind, rate.kind]),
        f"{size.gigabytes:g} GB ({size.source}) at {rate.mbPerSecond:g} MB/s ({rate.source})",
    )


@dataclass(frozen=True)
class Seq:
    """Nodes one after the other."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Par:
    """Nodes that run at once; what follows starts when the longest is done."""

    branches: tuple[Node, ...]


Node = Union[Part, Seq, Par]


@dataclass(frozen=True)
class Placed:
    part: Part
    start: float
    end: float
    critical: bool


@dataclass(frozen=True)
class Laid:
    end: float
    placed: tuple[Placed, ...]

    @property
    def critical(self) -> list[Placed]:
        return [p for p in self.placed if p.critical]


def _lay(node: Node, start: float, critical: bool, worst: bool) -> Laid:
    if isinstance(node, Part):
        end = start + (node.worst_seconds if worst else node.seconds)
        return Laid(end, (Placed(node, start, end, critical),))
    if isinstance(node, Seq):
        placed: list[Placed] = []
        end = start
        for item in node.items:
            laid = _lay(item, end, critical, worst)
            placed += laid.placed
            end = laid.end
        return Laid(end, tuple(placed))
    ends = [_lay(branch, start, False, worst).end for branch in node.branches]
    longest = ends.index(max(ends)) if ends else -1
    laid_branches = [_lay(b, start, critical and i == longest, worst) for i, b in enumerate(node.branches)]
    return Laid(max(ends, default=start), tuple(p for laid in laid_branches for p in laid.placed))


def layout(node: Node, start: float = 0.0, worst: bool = False) -> Laid:
    """Every part placed in time (seconds from `start`), the critical ones marked: in a parallel block the
    branch that ends last, the first of equals."""
    return _lay(node, start, True, worst)


def _span(node: Node, worst_basis: str = "") -> Span:
    laid, worst = layout(node), layout(node, worst=True)
    critical = [p.part for p in laid.critical]
    return Span(
        laid.end / 60,
        worst.end / 60,
        "; ".join(f"{p.name} {p.seconds:.0f} s" for p in critical),
        worst_basis
        or "at worst "
        + "; ".join(f"{p.part.name} {p.end - p.start:.0f} s" for p in worst.critical if p.end > p.start)
        + " (catalog/durations.yaml)",
        combined_kind(p.kind for p in critical if p.seconds) if any(p.seconds for p in critical) else "measured",
        node,
    )


def checkpoints_named(resource: Resource, rules: Rules) -> list[str]:
    """Checkpoint repositories a workload names: known repositories, `*MODEL*` env values, `--model` args, in
    pods that mount a claim (where checkpoints are stored; a client passing a served model name mounts none)."""
    known = set(load_checkpoint_sizes().repositories)
    found: list[str] = []
    for spec in pod_specs(resource, rules):
        if not mounted_claims(spec):
            continue
        for container in containers(spec):
            literals = [str(e["value"]) for e in container.get("env") or [] if isinstance(e, dict) and "value" in e]
            for env in container.get("env") or []:
                if "MODEL" in str(env.get("name", "")).upper() and "value" in env:
                    found += [v for v in str(env["value"]).split(",") if "/" in v and not v.startswith("/")]
            args = [str(a) for a in container.get("args") or []]
            found += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--model"]
            found += [v for v in literals + args if v in known]
    return sorted(set(found))


def checkpoint_size(repos: list[str]) -> Size:
    sizes = load_checkpoint_sizes()
    entries = [sizes.repositories.get(repo, sizes.unlisted) for repo in repos]
    return Size(
        sum(e.sizeGB for e in entries),
        combined_kind("estimate" if e.estimate else "measured" for e in entries),
        f"{len(repos)} checkpoint(s), catalog/checkpoints.yaml",
    )


def pull_part(graph: StackGraph, resource: Resource, rules: Rules, delivery: Delivery | None = None) -> Part | None:
    """Pulling the largest image of the workload (its pods pull at once) the way its nodes get images."""
    table = rules.durations
    sized = sorted((table.image(image)[1].unpackedGB, image) for image in images(resource, rules))
    if not sized:
        return None
    image = sized[-1][1]
    how = delivery or image_delivery(graph, next(iter(node_groups_of(graph, resource, rules)), None))
    if how == "ebs-snapshot":
        return Part.of(f"image {_short(image)} from the EBS-snapshot volume", table.steps[IMAGE_FROM_SNAPSHOT])
    _, size = table.image(image)
    label, rate = {"plain": "pull", "parallel": "parallel pull (SOCI)"}[how], table.imagePull[how]
    return Part(
        f"{label} {_short(image)}",
        size.unpackedGB * rate.secondsPerGB,
        size.unpackedGB * rate.worstSecondsPerGB,
        combined_kind([size.kind, rate.kind]),
        f"{image}: {size.unpackedGB:g} GB unpacked ({size.source}) x {rate.secondsPerGB:g} s/GB, {how} ({rate.source})",
    )


def _short(image: str) -> str:
    return image.rsplit("/", 1)[-1].split("@")[0].split(":")[0]


def file_system_read(graph: StackGraph, resource: Resource, rules: Rules, readers: int) -> tuple[float, Kind, str]:
    """MB/s one node reads the model cache at while `readers` nodes read it at once: the file system behind
    the claim the pods mount (FSx: storage x per-unit throughput; EFS: its elastic read), capped per node."""
    cap = rules.durations.rates[NODE_READ_CAP]
    shared = _file_system_throughput(graph, resource, rules)
    if shared is None or shared[0] / readers >= cap.mbPerSecond:
        return cap.mbPerSecond, cap.kind, f"the per-node read cap ({cap.source})"
    total, kind, source = shared
    return total / readers, kind, f"{source}, shared by {readers} node(s) reading at once"


def _file_system_throughput(graph: StackGraph, resource: Resource, rules: Rules) -> tuple[float, Kind, str] | None:
    for spec in pod_specs(resource, rules):
        for claim in mounted_claims(spec):
            pvc = graph.find_object("PersistentVolumeClaim", claim, resource.namespace)
            volume = static_volume(graph, pvc) if pvc else None
            if volume is None:
                continue
            for deps in volume.property_dependencies.values():
                for key in deps:
                    behind = graph.get(key)
                    if behind is not None and behind.type == FSX:
                        tib = float(behind.inputs.get("storageCapacity") or 0) / 1024
                        per_tib = float(behind.inputs.get("perUnitStorageThroughput") or 0)
                        return (
                            tib * per_tib,
                            "derived",
                            f"FSx for Lustre {per_tib:g} MB/s/TiB x {tib:.3g} TiB (AWS FSx API reference, "
                            "PerUnitStorageThroughput)",
                        )
                    if behind is not None and behind.type == EFS:
                        rate = rules.durations.rates[EFS_READ]
                        return rate.mbPerSecond, rate.kind, rate.source
    return None


def compilation_cache_shared(resource: Resource) -> bool:
    """Whether the graph's workers reuse a compilation cache other pods wrote (the DGD's `compilationCache`)."""
    components = lookup(resource.inputs, "spec.components") or []
    return any(isinstance(c, dict) and (c.get("compilationCache") or {}).get("pvcName") for c in components)


@dataclass(frozen=True)
class ServingParts:
    """A GPU worker's start on a node, step by step. `gated`: the workers wait for the node's prewarm."""

    plugins: Part
    pull: Part | None
    load: Part
    engine: Part
    gated: bool


def serving_parts(
    graph: StackGraph, resource: Resource, rules: Rules, cache_warm: bool, delivery: Delivery | None = None
) -> ServingParts:
    """`cache_warm`: the compilation cache holds this graph's artifacts (a later node), not the first start."""
    table = rules.durations
    backend = str(lookup(resource.inputs, "spec.backendFramework") or DEFAULT_BACKEND)
    engine_step = ENGINE_START.get((backend, cache_warm), ENGINE_START[(DEFAULT_BACKEND, cache_warm)])
    state = "compile cache warm" if cache_warm else "compile cache cold"
    gated = waits_for_prewarm(resource, rules)
    if gated:
        size = checkpoint_size(checkpoints_named(resource, rules))
        load = transfer("model load from page cache", size, table.rates[PAGE_CACHE])
    else:
        load = cache_read("model load from the model cache", graph, resource, rules, 1)
    return ServingParts(
        Part.of("device plugins advertise the GPUs", table.steps[DEVICE_PLUGINS]),
        pull_part(graph, resource, rules, delivery),
        load,
        Part.of(f"engine start, {backend}, {state}", table.steps[engine_step]),
        gated,
    )


def cache_read(name: str, graph: StackGraph, resource: Resource, rules: Rules, readers: int) -> Part:
    """The workload's checkpoints read from the model cache while `readers` nodes read it at once (a prewarm
    pod filling the page cache, or a worker loading cold)."""
    size = checkpoint_size(checkpoints_named(resource, rules))
    rate, kind, source = file_system_read(graph, resource, rules, readers)
    seconds = size.gigabytes * 1000 / rate
    return Part(
        name,
        seconds,
        seconds,
        combined_kind([size.kind, kind]),
        f"{size.gigabytes:g} GB ({size.source}) at {rate:,.0f} MB/s ({source})",
    )


def prewarm_part(graph: StackGraph, resource: Resource, rules: Rules, readers: int) -> Part:
    return cache_read("prewarm (checkpoints into the page cache)", graph, resource, rules, readers)


def gpu_nodes_at_up(graph: StackGraph, rules: Rules) -> int:
    """GPU nodes the first `up` starts at once (they share the model cache's throughput when they prewarm)."""
    return max(1, sum(int(lookup(g.inputs, "scalingConfig.desiredSize") or 0) for g in gpu_node_groups(graph, rules)))


def _startup_budget_minutes(spec: dict[str, Any]) -> float:
    probes = [probe for c in containers(spec) if (probe := c.get("startupProbe"))]
    return max(
        (float(p.get("failureThreshold", 3)) * float(p.get("periodSeconds", 10)) / 60 for p in probes), default=0.0
    )


def _init_gate_minutes(spec: dict[str, Any]) -> float:
    """The longest an init container may hold the pod before its containers start: the prewarm gate waits
    up to its `--timeout` (serving_stack.plan.model_cache.gate_workers), then lets the worker load cold."""
    return sum(
        float(match.group(1)) / 60
        for container in spec.get("initContainers") or []
        for match in re.finditer(r"--timeout (\d+)", " ".join(str(c) for c in container.get("command") or []))
    )


def serving_worst(resource: Resource, rules: Rules, parts: ServingParts) -> tuple[float, str]:
    """The longest a DGD may take from its creation to Ready (minutes): the image pull, the prewarm gate's
    bound, then the workers' startup budget or the worst load and engine start, whichever is longer (the
    device plugins run from the node's registration, before the graph's pods can start)."""
    specs = pod_specs(resource, rules)
    budget = max((_startup_budget_minutes(spec) for spec in specs), default=0.0)
    gate = max((_init_gate_minutes(spec) for spec in specs), default=0.0)
    pull = parts.pull.worst_seconds / 60 if parts.pull else 0.0
    start = (parts.load.worst_seconds + parts.engine.worst_seconds) / 60
    return (
        pull + gate + max(budget, start),
        f"image pull + the prewarm gate {gate:.0f} min + the workers' startupProbe budget {budget:.0f} min",
    )


def _serving_work(graph: StackGraph, resource: Resource, rules: Rules) -> Span:
    """A DynamoGraphDeployment on its own (schedule.py overlaps its steps with the node's): cache cold."""
    parts = serving_parts(graph, resource, rules, cache_warm=False)
    node = Seq((parts.plugins, *([parts.pull] if parts.pull else []), parts.load, parts.engine))
    typical = _span(node)
    worst, why = serving_worst(resource, rules, parts)
    return Span(typical.typical, worst, typical.basis, why, typical.kind)


def _downloads(graph: StackGraph, resource: Resource, rules: Rules) -> Node | None:
    repos = checkpoints_named(resource, rules)
    if not repos:
        return None
    size = checkpoint_size(repos)
    download = transfer("checkpoint download from the hub", size, rules.durations.rates[HUB_DOWNLOAD])
    text = " ".join(
        str(a)
        for spec in pod_specs(resource, rules)
        for c in containers(spec)
        for a in (c.get("command") or []) + (c.get("args") or [])
    )
    steps: list[Node] = (
        [Part.of("pip install of the downloader", rules.durations.steps[PIP_INSTALL])] if "pip install" in text else []
    )
    return Seq((*steps, download))


def _job_work(graph: StackGraph, resource: Resource, rules: Rules) -> Span:
    """Pull, then the program: a download Job's time is its downloads; any other Job (the smoke test) runs
    its requests."""
    pull = pull_part(graph, resource, rules)
    run = _downloads(graph, resource, rules) or Part.of("smoke test requests", rules.durations.steps[SMOKE_TEST])
    work = _span(Seq((*([pull] if pull else []), run)))
    deadline = lookup(resource.inputs, "spec.activeDeadlineSeconds")
    if deadline and float(deadline) / 60 > work.max:
        return dataclasses.replace(work, max=float(deadline) / 60, worst_basis=f"its activeDeadlineSeconds {deadline}")
    return dataclasses.replace(work, worst_basis="image pull and download at the worst rates")


def sagemaker_model(graph: StackGraph, endpoint: Resource) -> Resource | None:
    """The model of the endpoint configuration's first variant."""
    config = next((k for k in graph.direct_dependencies(endpoint.key) if k.startswith(SAGEMAKER_CONFIG)), None)
    models = (k for k in graph.direct_dependencies(config) if k.startswith(SAGEMAKER_MODEL)) if config else ()
    return next((graph.resources[k] for k in models), None)


def sagemaker_node(graph: StackGraph, endpoint: Resource, rules: Rules, image_cached: bool = False) -> Node:
    """From CreateEndpoint to InService: the instance starts, the image is pulled while the weights download
    from S3 (`ModelDataSource`), or the container downloads them from the hub once it runs; then the engine
    starts (no compilation cache on SageMaker: cold)."""
    table = rules.durations
    model = sagemaker_model(graph, endpoint)
    container = (model.inputs.get("primaryContainer") or {}) if model else {}
    known = set(load_checkpoint_sizes().repositories)
    values = [str(v) for v in (container.get("environment") or {}).values()]
    repos = sorted({v for v in values if v in known}) or ["unlisted"]  # the served or downloaded repository
    s3 = lookup(container, "modelDataSource.s3DataSources[].s3Uri") or container.get("modelDataUrl")
    size = checkpoint_size(repos)
    pull = Part.of(
        "container image from the cache" if image_cached else "container image pull",
        table.steps[SAGEMAKER_PULL_CACHED if image_cached else SAGEMAKER_PULL],
    )
    source = (
        ("weights from S3 (ModelDataSource)", S3_DOWNLOAD)
        if s3
        else ("weights from the hub at container start", HUB_DOWNLOAD)
    )
    weights = transfer(source[0], size, table.rates[source[1]])
    return Seq(
        (
            Part.of("instance start", table.steps[SAGEMAKER_INSTANCE]),
            Par((pull, weights)) if s3 else Seq((pull, weights)),
            transfer("model load", size, table.rates[PAGE_CACHE]),
            Part.of("engine start, vllm, compile cache cold, flashinfer JIT", table.steps[SAGEMAKER_ENGINE]),
        )
    )


def work(graph: StackGraph, resource: Resource, rules: Rules) -> Span:
    """The cloud work behind creating one resource, until it is really ready."""
    if not resource.custom or resource.is_provider:
        return ZERO
    if resource.type == NODE_GROUP:
        return rules.span(GPU_NODE_BOOT if resource.inputs.get("amiType") in rules.gpu_ami_types else CPU_NODE_GROUP)
    if resource.type == HELM_RELEASE:
        chart = str(resource.inputs.get("chart", ""))
        return rules.span(next((s for name, s in CHART_STEPS.items() if name in chart), HELM_INSTALL))
    if resource.type == SAGEMAKER_ENDPOINT:
        return _span(sagemaker_node(graph, resource, rules))
    if not resource.is_kubernetes_object:
        return rules.span(rules.aws_durations.get(resource.type, AWS_API_CALL))
    write = rules.span(KUBERNETES_WRITE)
    if resource.kind == "PersistentVolumeClaim":
        return binding(graph, resource, rules).span
    if resource.kind == "Job":
        return _job_work(graph, resource, rules)
    if resource.kind in rules.operators:
        serving = _serving_work(graph, resource, rules)
        return Span(
            write.typical + serving.typical, write.max + serving.max, serving.basis, serving.worst_basis, serving.kind
        )
    if pod_specs(resource, rules):
        pull = pull_part(graph, resource, rules)
        reads = (
            [prewarm_part(graph, resource, rules, gpu_nodes_at_up(graph, rules))]
            if checkpoints_named(resource, rules)
            else []
        )
        node = Seq(
            (
                Part("write", write.typical * 60, write.max * 60, write.kind, write.basis),
                *([pull] if pull else []),
                *reads,
            )
        )
        return _span(node)
    return write
