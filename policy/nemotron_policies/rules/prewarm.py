"""prewarm-daemonsets: every node pool that runs DGD workers from the model cache has a DaemonSet that
reads the workers' checkpoints into the page cache before they load them.

A pool is a distinct (required node selection, tolerations) pair of worker pods that mount the
`shared-model-cache` claim. Its prewarm DaemonSet must select the same nodes (same required node-affinity
terms, `nodeSelector` entries counting as `key In [value]`), tolerate every taint the workers tolerate, mount
the same claim read-only, and list in its container env (comma-separated Hugging Face repo ids) every
checkpoint the workers load: the base model (`--model`) and the draft model, which is `"model"` in the
vLLM speculative config (a ConfigMap key the worker's env references, or a literal) or
`speculative_config.speculative_model` in a TRT-LLM engine config (a `.yaml` key of a mounted ConfigMap).
The env is `PREWARM_REPOS` (the pack's contract) or `PREWARM_MODELS` (what `prewarm/prewarm.py` reads).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from pulumi_policy import ReportViolation, StackValidationArgs

from ..values import UNKNOWN, as_list, dig, parse_json, plain, text
from ..workloads import (
    CONFIG_MAP, DAEMON_SET, DGD, MODEL_CACHE_CLAIM, PodSpec, argv, claim_volume_names, containers, describe_selection,
    env_entry, expand_env, flag_value, main_container, node_selection, pod_specs, tolerates, tolerations,
    volume_mounts,
)

PREWARM_ENVS = ("PREWARM_REPOS", "PREWARM_MODELS")
SPECULATIVE_ENV = "SPECULATIVE_CONFIG"
HF_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass
class Pool:
    selection: Any
    tolerations: frozenset
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


class _ConfigMaps:
    """ConfigMap data of this stack by (namespace, name)."""

    def __init__(self, resources: list[Any]) -> None:
        self.data: dict[tuple[Any, Any], Any] = {}
        for resource in resources:
            if resource.resource_type == CONFIG_MAP:
                props = plain(resource.props)
                key = (dig(props, "metadata", "namespace"), dig(props, "metadata", "name"))
                self.data[key] = dig(props, "data")

    def value(self, namespace: Any, name: Any, key: Any) -> Any:
        """The value of a key; `UNKNOWN` if it cannot be told (unknown, or not a ConfigMap of this stack)."""
        data = self.data.get((namespace, name), UNKNOWN)
        return UNKNOWN if data is UNKNOWN else dig(data, key)


def _draft_from_vllm(container: dict[str, Any], namespace: Any, config_maps: _ConfigMaps) -> Any:
    source = expand_env(flag_value(argv(container), "--speculative-config"), container)
    if source is None:
        source = env_entry(container, SPECULATIVE_ENV)
    if isinstance(source, dict):
        ref = dig(source, "valueFrom", "configMapKeyRef")
        source = dig(source, "value") if ref is None else config_maps.value(namespace, dig(ref, "name"), dig(ref, "key"))
    return dig(parse_json(source), "model")


def _drafts_from_trtllm(spec: Any, namespace: Any, config_maps: _ConfigMaps) -> list[Any]:
    drafts = []
    for volume in as_list(dig(spec, "volumes")):
        name = dig(volume, "configMap", "name")
        if name is None:
            continue
        data = config_maps.data.get((namespace, name), UNKNOWN)
        for key, document in (data.items() if isinstance(data, dict) else [(None, UNKNOWN)]):
            if document is UNKNOWN:
                drafts.append(UNKNOWN)
            elif isinstance(key, str) and key.endswith(".yaml") and isinstance(document, str):
                try:
                    drafts.append(dig(yaml.safe_load(document), "speculative_config", "speculative_model"))
                except yaml.YAMLError:
                    continue
    return drafts


def worker_checkpoints(pod: PodSpec, namespace: Any, config_maps: _ConfigMaps) -> set[str]:
    """Hugging Face repos a worker loads (values that are unknown or local paths are left out)."""
    container = main_container(pod.spec)
    if container is None:
        return set()
    candidates = [flag_value(argv(container), "--model"), _draft_from_vllm(container, namespace, config_maps)]
    candidates += _drafts_from_trtllm(pod.spec, namespace, config_maps)
    return {c for c in candidates if isinstance(c, str) and HF_REPO.match(c)}


def _pools(resources: list[Any], config_maps: _ConfigMaps) -> dict[tuple, Pool]:
    pools: dict[tuple, Pool] = {}
    for resource in resources:
        if resource.resource_type != DGD:
            continue
        props = plain(resource.props)
        namespace = dig(props, "metadata", "namespace")
        for pod in pod_specs(DGD, props):
            if not pod.is_worker or not claim_volume_names(pod.spec):
                continue
            selection, tolerated = node_selection(pod.spec), tolerations(pod.spec)
            if UNKNOWN in (selection, tolerated):
                continue
            pool = pools.setdefault((selection, tolerated, namespace), Pool(selection, tolerated, namespace, urn=resource.urn))
            pool.workers.append(f"{resource.name}/{pod.component_name}")
            pool.checkpoints |= worker_checkpoints(pod, namespace, config_maps)
    return pools


def _prewarmers(resources: list[Any]) -> list[Prewarmer]:
    prewarmers = []
    for resource in resources:
        if resource.resource_type != DAEMON_SET:
            continue
        props = plain(resource.props)
        spec = dig(props, "spec", "template", "spec")
        volumes = claim_volume_names(spec)
        read_only: Any = UNKNOWN if dig(spec, "volumes") is UNKNOWN else None
        if volumes:
            read_only = all(
                any(dig(v, "persistentVolumeClaim", "readOnly") is True for v in as_list(dig(spec, "volumes"))
                    if dig(v, "name") == name)
                or (bool(volume_mounts(spec, name)) and all(m.get("readOnly") is True for m in volume_mounts(spec, name)))
                for name in volumes)
        listed = [dig(spec, f) for f in ("containers", "initContainers")] + [c.get("env") for c in containers(spec)]
        repos: Any = UNKNOWN if UNKNOWN in listed else frozenset()
        entries = [entry for container in containers(spec) for name in PREWARM_ENVS
                   if (entry := env_entry(container, name)) is not None]
        for entry in entries:
            value = dig(entry, "value")
            if repos is UNKNOWN or value is UNKNOWN or "valueFrom" in entry:
                repos = UNKNOWN
                break
            if isinstance(value, str):
                repos = repos | {r.strip() for r in value.split(",") if r.strip()}
        prewarmers.append(Prewarmer(text(dig(props, "metadata", "name")) or resource.name,
                                    dig(props, "metadata", "namespace"), node_selection(spec), tolerations(spec),
                                    read_only, repos))
    return prewarmers


def _shortfalls(prewarmer: Prewarmer, pool: Pool) -> list[str]:
    problems = []
    if UNKNOWN not in (prewarmer.namespace, pool.namespace) and prewarmer.namespace != pool.namespace:
        problems.append(f"runs in namespace {prewarmer.namespace}, the workers in {pool.namespace}")
    if prewarmer.tolerations is not UNKNOWN:
        missing = [t for t in pool.tolerations if not any(tolerates(own, t) for own in prewarmer.tolerations)]
        if missing:
            problems.append("does not tolerate " + ", ".join(
                f"{key or '*'}{'=' + value if value else ''}:{effect or '*'}" for key, _, value, effect in sorted(missing)))
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
    config_maps = _ConfigMaps(args.resources)
    prewarmers = _prewarmers(args.resources)
    for pool in _pools(args.resources, config_maps).values():
        where = (f"workers {', '.join(pool.workers)} (nodes: {describe_selection(pool.selection)}; "
                 f"checkpoints: {', '.join(sorted(pool.checkpoints)) or 'none known'})")
        candidates = [p for p in prewarmers if p.selection is UNKNOWN or p.selection == pool.selection]
        if not candidates:
            report_violation(f"no prewarm DaemonSet selects the nodes of {where}", pool.urn)
            continue
        shortfalls = {p.name: _shortfalls(p, pool) for p in candidates}
        if all(shortfalls.values()):
            details = "; ".join(f"DaemonSet {name} {', '.join(problems)}" for name, problems in sorted(shortfalls.items()))
            report_violation(f"no prewarm DaemonSet covers {where}: {details}", pool.urn)
