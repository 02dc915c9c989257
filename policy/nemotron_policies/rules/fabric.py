"""fabric-requests: disaggregated prefill/decode workers move the KV cache over the RDMA fabric of their
nodes, so each must request that fabric (request = limit) and select the NIXL backend that speaks it
(EFA: LIBFABRIC; InfiniBand: UCX, NIXL's default), and prefill and decode must share speculative-decoding
settings (NIXL metadata compatibility).

The fabric of a node is known when the worker is pinned (`nemotron.nvidia.com/pool In [<pool>]`) to an
EKS node group of this stack, from the group's labels. A worker on an existing cluster must at least be
consistent with itself, and a worker without any fabric resource needs the DGD annotation
`nemotron.nvidia.com/fabric-out-of-band: <name>` (the fabric is provided outside Kubernetes resources).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from pulumi_policy import ReportViolation, StackValidationArgs

from ..values import UNKNOWN, as_dict, dig, parse_json, plain, text
from ..workloads import (
    DGD, DISAGGREGATED_TYPES, EFA, GPU, INFINIBAND, POOL_LABEL, PodSpec, argv, expand_env, flag_value,
    main_container, node_selection, pinned_values, pod_specs, resource_count,
)

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
FABRIC_LABEL = "nemotron.nvidia.com/fabric"
EFA_PER_GPU_LABEL = "nemotron.nvidia.com/efa-per-gpu"
OUT_OF_BAND_ANNOTATION = "nemotron.nvidia.com/fabric-out-of-band"
LIBFABRIC, UCX = "LIBFABRIC", "UCX"
FABRIC_RESOURCE = {"efa": EFA, "ib": INFINIBAND}
FABRIC_BACKEND = {"efa": LIBFABRIC, "ib": UCX}
FABRIC_NAME = {"efa": "EFA", "ib": "InfiniBand"}
# Flags besides --speculative-config that change what a worker's NIXL metadata describes.
SPECULATIVE_FLAGS = ("--mamba-cache-mode",)


@dataclass(frozen=True)
class NodePool:
    name: str
    fabric: Any  # "efa" | "ib" | "none" | None (not labelled) | UNKNOWN
    efa_per_gpu: Any  # int | None | UNKNOWN


def node_pools(resources: list[Any]) -> dict[str, NodePool]:
    """Pools of this stack's EKS node groups, by their `nemotron.nvidia.com/pool` label."""
    pools = {}
    for resource in resources:
        if resource.resource_type != NODE_GROUP:
            continue
        labels = dig(plain(resource.props), "labels")
        name = text(dig(labels, POOL_LABEL))
        if name is None:
            continue
        efa_per_gpu = dig(labels, EFA_PER_GPU_LABEL)
        if efa_per_gpu is not UNKNOWN:
            efa_per_gpu = int(efa_per_gpu) if str(efa_per_gpu).isdigit() else None
        pools[name] = NodePool(name, dig(labels, FABRIC_LABEL), efa_per_gpu)
    return pools


def kv_backends(container: dict[str, Any]) -> Any:
    """NIXL backends of `--kv-transfer-config` (UCX when none is given), `UNKNOWN`, or an error text."""
    value = expand_env(flag_value(argv(container), "--kv-transfer-config"), container)
    if value is None:
        return [UCX]
    if value is UNKNOWN or isinstance(value, dict):  # unknown, or read from a ConfigMap/Secret
        return UNKNOWN
    config = parse_json(value)
    if not isinstance(config, dict):
        return "--kv-transfer-config is not a JSON object"
    backends = dig(config, "kv_connector_extra_config", "backends")
    if backends is None:
        return [UCX]
    if not isinstance(backends, list) or UNKNOWN in backends:
        return UNKNOWN
    return [str(b).upper() for b in backends]


def _requested_fabrics(container: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Fabric resource -> count the worker gets (limit, else request), and request/limit mismatches."""
    requested, problems = {}, []
    for resource in (EFA, INFINIBAND):
        request = resource_count(container, "requests", resource)
        limit = resource_count(container, "limits", resource)
        if request is None and limit is None:
            continue
        if UNKNOWN in (request, limit):
            requested[resource] = UNKNOWN
            continue
        if request != limit:
            problems.append(f"requests {resource}={request} but limits {resource}={limit}; set request = limit")
        requested[resource] = limit if limit is not None else request
    return requested, problems


def _backend_problem(fabric: str, backends: Any) -> list[str]:
    if backends is UNKNOWN:
        return []
    if isinstance(backends, str):
        return [backends]
    expected = FABRIC_BACKEND[fabric]
    if expected in backends:
        return []
    fix = ('set kv_connector_extra_config.backends to ["LIBFABRIC"]' if fabric == "efa"
           else 'omit kv_connector_extra_config.backends (NIXL then uses UCX) or set it to ["UCX"]')
    return [f"KV transfer uses NIXL backends {backends} but its fabric is {FABRIC_NAME[fabric]}; "
            f"in --kv-transfer-config, {fix}"]


def _pool_problems(pool: NodePool, container: dict[str, Any], requested: dict[str, Any], backends: Any,
                   out_of_band: Optional[str]) -> list[str]:
    where = f"pinned to pool {pool.name!r} (fabric {pool.fabric})"
    fabric = pool.fabric
    wanted = FABRIC_RESOURCE.get(fabric)
    problems = [f"{where}: requests {resource}, which its nodes do not have"
                for resource, amount in requested.items() if resource != wanted and amount not in (0, UNKNOWN)]
    if fabric == "efa":
        gpus = resource_count(container, "limits", GPU)
        gpus = resource_count(container, "requests", GPU) if gpus is None else gpus
        if pool.efa_per_gpu is None:
            problems.append(f"{where}: the node group has no {EFA_PER_GPU_LABEL} label")
        elif UNKNOWN not in (pool.efa_per_gpu, gpus, requested.get(EFA)) and gpus is not None:
            expected = pool.efa_per_gpu * gpus
            if requested.get(EFA, 0) != expected:
                problems.append(f"{where}: requests {EFA}={requested.get(EFA, 0)}, needs {expected} "
                                f"({pool.efa_per_gpu} per GPU x {gpus} {GPU})")
        return problems + _backend_problem("efa", backends)
    if fabric == "ib":
        amount = requested.get(INFINIBAND, 0)
        if amount is not UNKNOWN and amount < 1:
            problems.append(f"{where}: requests {INFINIBAND}={amount}, needs at least 1")
        return problems + _backend_problem("ib", backends)
    if not out_of_band:
        problems.append(f"{where}: its nodes have no RDMA fabric; pin it to an efa or ib pool, or annotate the "
                        f"DGD with {OUT_OF_BAND_ANNOTATION}: <name> if the fabric is provided out of band")
    return problems


def _unpinned_problems(requested: dict[str, Any], backends: Any, out_of_band: Optional[str]) -> list[str]:
    fabrics = [f for f, resource in FABRIC_RESOURCE.items() if requested.get(resource, 0) not in (0, UNKNOWN)]
    if len(fabrics) > 1:
        return [f"requests both {EFA} and {INFINIBAND}; a worker uses one fabric"]
    if fabrics:
        return _backend_problem(fabrics[0], backends)
    if out_of_band or UNKNOWN in requested.values():
        return []
    return [f"requests no RDMA fabric ({EFA} or {INFINIBAND}); request the fabric of its nodes, or annotate the "
            f"DGD with {OUT_OF_BAND_ANNOTATION}: <name> if the fabric is provided out of band"]


def _fabric_problems(pod: PodSpec, container: dict[str, Any], pools: dict[str, NodePool],
                     out_of_band: Optional[str]) -> list[str]:
    requested, problems = _requested_fabrics(container)
    backends = kv_backends(container)
    selection = node_selection(pod.spec)
    if selection is UNKNOWN:
        return problems
    stack_pools = [pools[name] for name in sorted(pinned_values(selection, POOL_LABEL) or ()) if name in pools]
    known_pools = [p for p in stack_pools if p.fabric is not None]
    if any(p.fabric is UNKNOWN for p in known_pools):
        return problems
    if known_pools:
        for pool in known_pools:
            problems += _pool_problems(pool, container, requested, backends, out_of_band)
    else:
        problems += _unpinned_problems(requested, backends, out_of_band)
    return problems


def _speculative_source(container: dict[str, Any]) -> Any:
    """Where --speculative-config comes from, as a comparable description."""
    source = expand_env(flag_value(argv(container), "--speculative-config"), container)
    if source is None:
        return "none"
    if source is UNKNOWN:
        return UNKNOWN
    if isinstance(source, dict):
        for kind, ref in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
            name, key = dig(source, "valueFrom", ref, "name"), dig(source, "valueFrom", ref, "key")
            if ref in as_dict(dig(source, "valueFrom")):
                return UNKNOWN if UNKNOWN in (name, key) else f"{kind} {name} key {key}"
        return UNKNOWN
    parsed = parse_json(source)
    return f"literal {json.dumps(parsed, sort_keys=True) if parsed is not None else source}"


def _speculative_mismatches(workers: list[tuple[PodSpec, dict[str, Any]]]) -> list[str]:
    def described(container: dict[str, Any]) -> dict[str, Any]:
        flags = {flag: flag_value(argv(container), flag) for flag in SPECULATIVE_FLAGS}
        return {"--speculative-config": _speculative_source(container), **flags}

    if len(workers) < 2:
        return []
    (first, first_container), *others = workers
    reference = described(first_container)
    problems = []
    for pod, container in others:
        for setting, value in described(container).items():
            expected = reference[setting]
            if UNKNOWN not in (value, expected) and value != expected:
                problems.append(f"{first.owner} and {pod.owner} differ in {setting} ({expected} vs {value}); "
                                "prefill and decode must use identical speculative-decoding settings")
    return problems


def validate_fabric_requests(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    pools = node_pools(args.resources)
    for resource in args.resources:
        if resource.resource_type != DGD:
            continue
        props = plain(resource.props)
        out_of_band = text(dig(props, "metadata", "annotations", OUT_OF_BAND_ANNOTATION))
        workers = []
        for pod in pod_specs(DGD, props):
            container = main_container(pod.spec) if pod.component_type in DISAGGREGATED_TYPES else None
            if container is not None:
                workers.append((pod, container))
        workers.sort(key=lambda worker: worker[0].component_type != "prefill")
        for pod, container in workers:
            for problem in _fabric_problems(pod, container, pools, out_of_band):
                report_violation(f"{pod.owner}: {problem}", resource.urn)
        for problem in _speculative_mismatches(workers):
            report_violation(problem, resource.urn)
