"""prewarm-daemonsets: every node pool that runs DGD workers from the model cache has a DaemonSet that
reads the workers' checkpoints into the page cache before they load them.

A pool is a distinct (required node selection, tolerations) pair of worker pods that mount the
`shared-model-cache` claim: Dynamo workers, and any other pod (a plain Deployment, a custom resource's pod)
that mounts the claim and asks for GPUs, since it loads checkpoints from the cache the same way. Its prewarm DaemonSet must select the same nodes (same required node-affinity
terms, `nodeSelector` entries counting as `key In [value]`), tolerate every taint the workers tolerate, mount
the same claim read-only, and list in its container env (comma-separated Hugging Face repo ids) every
checkpoint the workers load: the base model (`--model`) and the draft model, which is `"model"` in the
vLLM speculative config (a ConfigMap key the worker's env references, or a literal) or
`speculative_config.speculative_model` in a TRT-LLM engine config (a `.yaml` key of a mounted ConfigMap).
The env is `PREWARM_MODELS` (what `prewarm/prewarm.py` reads).

The stack's documented switch `modelCache.prewarm.enabled: false` renders no prewarm DaemonSet; a stack named
in `unwarmedStacks` (pack config, default none) is not required to have one (its workers load cold), while a
prewarm DaemonSet it does have is still checked.

A prewarm DaemonSet is one that lists checkpoints in that env or a child of the stack's prewarm component
(in any served `apps` version); one that lists none and mounts no claim (the image pre-pull) is held to
the limits below but covers no pool. Every container of it, init containers included, sets cpu and memory limits:
the page cache it fills is charged to its cgroup, and an unbounded reader on every GPU node competes with
the workers for memory and CPU.

It reads the workers' checkpoints (vLLM and TRT-LLM configs) to know what their prewarm DaemonSet has to
list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from pulumi_policy import PolicyConfigSchema, ReportViolation, StackValidationArgs

from ..arguments import ConfigMaps, Opaque, command_line, env_value, flag_value
from ..config import current_stack, settings
from ..kinds import ancestor_types, kubernetes_objects
from ..names import GPU, MODEL_CACHE_CLAIM, MODEL_PREWARM_COMPONENT, PREWARM_ENVS, SPECULATIVE_ENV
from ..pods import is_workload_kind, object_pods
from ..values import UNKNOWN, as_list, dig, parse_json, plain, text
from ..workloads import (
    PodSpec,
    claim_volume_names,
    containers,
    describe_selection,
    env_entry,
    main_container,
    node_selection,
    resource_count,
    tolerates,
    tolerations,
    volume_mounts,
)

LIMITED_RESOURCES = ("cpu", "memory")
RUN_TO_COMPLETION = frozenset({"Job", "CronJob"})  # a GPU Job (a download, a check) is no serving pool
SCHEMA = PolicyConfigSchema(
    {
        "unwarmedStacks": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Stacks that run with modelCache.prewarm.enabled: false: their worker pools need no "
            "prewarm DaemonSet (a prewarm DaemonSet they have is still checked).",
        },
    }
)
HF_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass
class Pool:
    selection: Any
    tolerations: frozenset[Any]
    namespace: Any
    workers: list[str] = field(default_factory=list)
    checkpoints: set[str] = field(default_factory=set)
    urn: str = ""


@dataclass(frozen=True)
class Prewarmer:
    name: str
    namespace: Any
    selection: Any
    tolerations: Any
    read_only_claim: Any  # True/False, None when it does not mount the claim, or UNKNOWN
    repos: Any  # frozenset of repo ids, or UNKNOWN
    urn: str = ""
    unlimited: tuple[str, ...] = ()


def _draft_from_vllm(pod: PodSpec, container: dict[str, Any], config_maps: ConfigMaps) -> Any:
    words = command_line(container, pod.namespace, config_maps)
    source = flag_value(words, "--speculative-config")
    if source is None:
        source = env_value(container, SPECULATIVE_ENV, pod.namespace, config_maps)
    return None if isinstance(source, Opaque) else dig(parse_json(source), "model")


def _drafts_from_trtllm(spec: Any, namespace: Any, config_maps: ConfigMaps) -> list[Any]:
    drafts = []
    for volume in as_list(dig(spec, "volumes")):
        name = dig(volume, "configMap", "name")
        if name is None:
            continue
        data = config_maps.data_of(namespace, name)
        for key, document in data.items() if isinstance(data, dict) else [(None, UNKNOWN)]:
            if document is UNKNOWN:
                drafts.append(UNKNOWN)
            elif isinstance(key, str) and key.endswith(".yaml") and isinstance(document, str):
                try:
                    drafts.append(dig(yaml.safe_load(document), "speculative_config", "speculative_model"))
                except yaml.YAMLError:
                    continue
    return drafts


def _gpu_containers(spec: Any) -> list[dict[str, Any]]:
    return [
        c
        for c in containers(spec, ("containers",))
        if any(resource_count(c, section, GPU) not in (None, 0, UNKNOWN) for section in ("limits", "requests"))
    ]


def worker_checkpoints(pod: PodSpec, config_maps: ConfigMaps) -> set[str]:
    """Hugging Face repos a worker loads (values that are unknown or local paths are left out)."""
    container = main_container(pod.spec) or next(iter(_gpu_containers(pod.spec)), None)
    if container is None:
        return set()
    candidates = [
        flag_value(command_line(container, pod.namespace, config_maps), "--model"),
        _draft_from_vllm(pod, container, config_maps),
    ]
    candidates += _drafts_from_trtllm(pod.spec, pod.namespace, config_maps)
    return {c for c in candidates if isinstance(c, str) and HF_REPO.match(c)}


def _pools(resources: list[Any], config_maps: ConfigMaps) -> dict[tuple[Any, ...], Pool]:
    pools: dict[tuple[Any, ...], Pool] = {}
    for resource in resources:
        for obj in kubernetes_objects(resource.resource_type, plain(resource.props)):
            for pod in object_pods(obj):
                if not (pod.is_worker or (obj.kind not in RUN_TO_COMPLETION and _gpu_containers(pod.spec))):
                    continue
                if claim_volume_names(pod.spec):
                    _add_to_pool(pools, resource, pod, config_maps)
    return pools


def _add_to_pool(pools: dict[tuple[Any, ...], Pool], resource: Any, pod: PodSpec, config_maps: ConfigMaps) -> None:
    selection, tolerated = node_selection(pod.spec), tolerations(pod.spec)
    if UNKNOWN in (selection, tolerated):
        return
    key = (selection, tolerated, pod.namespace)
    pool = pools.setdefault(key, Pool(selection, tolerated, pod.namespace, urn=resource.urn))
    pool.workers.append(f"{resource.name}/{pod.component_name or pod.owner}")
    pool.checkpoints |= worker_checkpoints(pod, config_maps)


def _read_only_claim(spec: Any) -> Any:
    volumes = claim_volume_names(spec)
    if not volumes:
        return UNKNOWN if dig(spec, "volumes") is UNKNOWN else None
    return all(
        any(
            dig(v, "persistentVolumeClaim", "readOnly") is True
            for v in as_list(dig(spec, "volumes"))
            if dig(v, "name") == name
        )
        or (bool(volume_mounts(spec, name)) and all(m.get("readOnly") is True for m in volume_mounts(spec, name)))
        for name in volumes
    )


def _repos(spec: Any) -> Any:
    """The checkpoints a DaemonSet's env says it warms: a frozenset, `UNKNOWN`, or None if it says nothing."""
    listed = [dig(spec, f) for f in ("containers", "initContainers")] + [c.get("env") for c in containers(spec)]
    entries = [
        entry
        for container in containers(spec)
        for name in PREWARM_ENVS
        if (entry := env_entry(container, name)) is not None
    ]
    if not entries:
        return UNKNOWN if UNKNOWN in listed else None
    repos: frozenset[str] = frozenset()
    for entry in entries:
        value = dig(entry, "value")
        if value is UNKNOWN or "valueFrom" in entry:
            return UNKNOWN
        if isinstance(value, str):
            repos |= {r.strip() for r in value.split(",") if r.strip()}
    return repos


def _unlimited(spec: Any) -> list[str]:
    """Containers that set no cpu or memory limit: a DaemonSet on every GPU node reading the whole cache."""
    found = []
    for container in containers(spec):
        limits = dig(container, "resources", "limits")
        if limits is UNKNOWN or dig(container, "resources") is UNKNOWN:
            continue
        missing = [r for r in LIMITED_RESOURCES if dig(limits, r) in (None, "")]
        if missing:
            found.append(f"container {text(container.get('name')) or '?'} sets no {' or '.join(missing)} limit")
    return found


def _prewarmers(resources: list[Any]) -> list[Prewarmer]:
    """DaemonSets that prewarm: they list checkpoints in a prewarm env or belong to the stack's prewarm
    component."""
    prewarmers = []
    for resource in resources:
        in_component = MODEL_PREWARM_COMPONENT in ancestor_types(resource.urn)
        for obj in kubernetes_objects(resource.resource_type, plain(resource.props)):
            if not is_workload_kind(obj, "DaemonSet"):
                continue
            for pod in object_pods(obj):
                repos = _repos(pod.spec)
                if repos is None and not in_component:
                    continue
                prewarmers.append(
                    Prewarmer(
                        text(obj.name) or resource.name,
                        obj.namespace,
                        node_selection(pod.spec),
                        tolerations(pod.spec),
                        _read_only_claim(pod.spec),
                        frozenset() if repos is None else repos,
                        resource.urn,
                        tuple(_unlimited(pod.spec)),
                    )
                )
    return prewarmers


def _shortfalls(prewarmer: Prewarmer, pool: Pool) -> list[str]:
    problems = []
    if UNKNOWN not in (prewarmer.namespace, pool.namespace) and prewarmer.namespace != pool.namespace:
        problems.append(f"runs in namespace {prewarmer.namespace}, the workers in {pool.namespace}")
    if prewarmer.tolerations is not UNKNOWN:
        missing = [t for t in pool.tolerations if not any(tolerates(own, t) for own in prewarmer.tolerations)]
        if missing:
            problems.append(
                "does not tolerate "
                + ", ".join(
                    f"{key or '*'}{'=' + value if value else ''}:{effect or '*'}"
                    for key, _, value, effect in sorted(missing)
                )
            )
    if prewarmer.read_only_claim is None:
        problems.append(f"does not mount the {MODEL_CACHE_CLAIM} claim")
    elif prewarmer.read_only_claim is False:
        problems.append(f"mounts the {MODEL_CACHE_CLAIM} claim writable; set readOnly: true")
    if prewarmer.repos is not UNKNOWN:
        missing_repos = sorted(pool.checkpoints - prewarmer.repos)
        if missing_repos:
            problems.append(f"does not warm {', '.join(missing_repos)} (env {' or '.join(PREWARM_ENVS)})")
    return problems


def validate_prewarm_daemonsets(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    config_maps = ConfigMaps(args.resources)
    prewarmers = _prewarmers(args.resources)
    for prewarmer in prewarmers:
        if prewarmer.unlimited:
            report_violation(
                f"prewarm DaemonSet {prewarmer.name}: {'; '.join(prewarmer.unlimited)}; page cache is "
                "charged to the reader, so an unlimited prewarmer can starve the workers on its node",
                prewarmer.urn,
            )
    unwarmed = current_stack() in as_list(settings(args, SCHEMA)["unwarmedStacks"])
    for pool in _pools(args.resources, config_maps).values():
        where = (
            f"workers {', '.join(pool.workers)} (nodes: {describe_selection(pool.selection)}; "
            f"checkpoints: {', '.join(sorted(pool.checkpoints)) or 'none known'})"
        )
        # One that lists no checkpoints and mounts no claim (the component's image pre-pull) warms nothing: it is
        # held to the limits above but never stands in for a missing prewarm DaemonSet.
        candidates = [
            p
            for p in prewarmers
            if (p.selection is UNKNOWN or p.selection == pool.selection) and (p.repos or p.read_only_claim is not None)
        ]
        if not candidates:
            if not unwarmed:
                report_violation(f"no prewarm DaemonSet selects the nodes of {where}", pool.urn)
            continue
        shortfalls = {p.name: _shortfalls(p, pool) for p in candidates}
        if all(shortfalls.values()):
            details = "; ".join(
                f"DaemonSet {name} {', '.join(problems)}" for name, problems in sorted(shortfalls.items())
            )
            report_violation(f"no prewarm DaemonSet covers {where}: {details}", pool.urn)
