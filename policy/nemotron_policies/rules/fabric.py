"""fabric-requests: disaggregated prefill/decode workers move the KV cache over the RDMA fabric of their
nodes, so each must request that fabric (request = limit) and select the NIXL backend that speaks it
(EFA: LIBFABRIC; InfiniBand: UCX, NIXL's default), and prefill and decode of one resource must share
speculative-decoding settings (NIXL metadata compatibility).

Workers are found by what they do (`disaggregation.workers`), in any resource that declares pods, with
every value resolved from args, env, ConfigMaps of the stack and shell scripts. The fabric of a node is
known when the worker is pinned (`nemotron.nvidia.com/pool In [<pool>]`) to an EKS node group of this
stack, from the group's labels. A worker whose nodes have no Kubernetes fabric resource passes only when
the nodes state that their fabric is provided out of band: the node group of its pool carries the label
`nemotron.nvidia.com/fabric-out-of-band: <name>`, or, off the stack's pools, the worker requires that node
label in every node-selector term (so it can only run where the cluster states it). A label or annotation
the workload puts on itself exempts nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from ..arguments import ConfigMaps
from ..disaggregation import UCX, Worker, kv_backends, kv_transfer_config, speculative_settings, workers
from ..names import EFA, EFA_PER_GPU_LABEL, FABRIC_LABEL, FABRIC_OUT_OF_BAND_LABEL, GPU, INFINIBAND, POOL_LABEL
from ..values import UNKNOWN, dig, plain, text
from ..workloads import node_selection, pinned_values, resource_count

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LIBFABRIC = "LIBFABRIC"
FABRIC_RESOURCE = {"efa": EFA, "ib": INFINIBAND}
FABRIC_BACKEND = {"efa": LIBFABRIC, "ib": UCX}
FABRIC_NAME = {"efa": "EFA", "ib": "InfiniBand"}
OUT_OF_BAND_HINT = (
    f"run it on nodes that state their fabric out of band (node label {FABRIC_OUT_OF_BAND_LABEL}, "
    "required by the worker's node affinity or set by its pool's node group)"
)


@dataclass(frozen=True)
class NodePool:
    name: str
    fabric: Any  # "efa" | "ib" | "none" | None (not labelled) | UNKNOWN
    efa_per_gpu: Any  # int | None | UNKNOWN
    out_of_band: Any  # the mechanism's name | None | UNKNOWN


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
        fabric, out_of_band = dig(labels, FABRIC_LABEL), dig(labels, FABRIC_OUT_OF_BAND_LABEL)
        pools[name] = NodePool(
            name,
            fabric if fabric is UNKNOWN else text(fabric),
            efa_per_gpu,
            out_of_band if out_of_band is UNKNOWN else text(out_of_band),
        )
    return pools


def _requested_fabrics(container: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Fabric resource -> count the worker gets (limit, else request), and request/limit mismatches (Kubernetes
    defaults a missing request to the limit; a request without a limit is refused by the API server)."""
    requested, problems = {}, []
    for resource in (EFA, INFINIBAND):
        request = resource_count(container, "requests", resource)
        limit = resource_count(container, "limits", resource)
        if request is None and limit is None:
            continue
        if UNKNOWN in (request, limit):
            requested[resource] = UNKNOWN
            continue
        if request is not None and request != limit:  # a missing request defaults to the limit
            problems.append(f"requests {resource}={request} but limits {resource}={limit}; set request = limit")
        requested[resource] = limit if limit is not None else request
    return requested, problems


def _backend_problem(fabric: str, backends: Any) -> list[str]:
    if backends is UNKNOWN:
        return []
    if FABRIC_BACKEND[fabric] in backends:
        return []
    fix = (
        'set kv_connector_extra_config.backends to ["LIBFABRIC"]'
        if fabric == "efa"
        else 'omit kv_connector_extra_config.backends (NIXL then uses UCX) or set it to ["UCX"]'
    )
    return [
        f"KV transfer uses NIXL backends {backends} but its fabric is {FABRIC_NAME[fabric]}; "
        f"in --kv-transfer-config, {fix}"
    ]


def _pool_problems(pool: NodePool, container: dict[str, Any], requested: dict[str, Any], backends: Any) -> list[str]:
    where = f"pinned to pool {pool.name!r} (fabric {pool.fabric})"
    wanted = FABRIC_RESOURCE.get(pool.fabric)
    problems = [
        f"{where}: requests {resource}, which its nodes do not have"
        for resource, amount in requested.items()
        if resource != wanted and amount not in (0, UNKNOWN)
    ]
    if pool.fabric == "efa":
        gpus = resource_count(container, "limits", GPU)
        gpus = resource_count(container, "requests", GPU) if gpus is None else gpus
        if pool.efa_per_gpu is None:
            problems.append(f"{where}: the node group has no {EFA_PER_GPU_LABEL} label")
        elif UNKNOWN not in (pool.efa_per_gpu, gpus, requested.get(EFA)) and gpus is not None:
            expected = pool.efa_per_gpu * gpus
            if requested.get(EFA, 0) != expected:
                problems.append(
                    f"{where}: requests {EFA}={requested.get(EFA, 0)}, needs {expected} "
                    f"({pool.efa_per_gpu} per GPU x {gpus} {GPU})"
                )
        return problems + _backend_problem("efa", backends)
    if pool.fabric == "ib":
        amount = requested.get(INFINIBAND, 0)
        if amount is not UNKNOWN and amount < 1:
            problems.append(f"{where}: requests {INFINIBAND}={amount}, needs at least 1")
        return problems + _backend_problem("ib", backends)
    if pool.out_of_band is None:
        problems.append(
            f"{where}: its nodes have no RDMA fabric and the node group states none out of band; pin "
            f"it to an efa or ib pool, or label the pool's nodes {FABRIC_OUT_OF_BAND_LABEL}: <name>"
        )
    return problems


def _requires_out_of_band_nodes(selection: Any) -> bool:
    return bool(selection) and all(
        any(key == FABRIC_OUT_OF_BAND_LABEL and (op == "Exists" or (op == "In" and values)) for key, op, values in term)
        for term in selection
    )


def _unpinned_problems(requested: dict[str, Any], backends: Any, selection: Any) -> list[str]:
    fabrics = [f for f, resource in FABRIC_RESOURCE.items() if requested.get(resource, 0) not in (0, UNKNOWN)]
    if len(fabrics) > 1:
        return [f"requests both {EFA} and {INFINIBAND}; a worker uses one fabric"]
    if fabrics:
        return _backend_problem(fabrics[0], backends)
    if UNKNOWN in requested.values() or _requires_out_of_band_nodes(selection):
        return []
    return [f"requests no RDMA fabric ({EFA} or {INFINIBAND}); request the fabric of its nodes, or {OUT_OF_BAND_HINT}"]


def fabric_problems(worker: Worker, pools: dict[str, NodePool]) -> list[str]:
    requested, problems = _requested_fabrics(worker.container)
    backends = kv_backends(kv_transfer_config(worker.words))
    if isinstance(backends, str):  # unreadable or malformed: reported once, the fabric checks skip it
        problems.append(backends)
        backends = UNKNOWN
    selection = node_selection(worker.pod.spec)
    if selection is UNKNOWN:
        return problems
    stack_pools = [pools[name] for name in sorted(pinned_values(selection, POOL_LABEL) or ()) if name in pools]
    known_pools = [p for p in stack_pools if p.fabric is not None]
    if any(UNKNOWN in (p.fabric, p.out_of_band) for p in known_pools):
        return problems
    if known_pools:
        for pool in known_pools:
            problems += _pool_problems(pool, worker.container, requested, backends)
        return problems
    return problems + _unpinned_problems(requested, backends, selection)


def _speculative_mismatches(group: list[Worker]) -> list[str]:
    if len(group) < 2:
        return []
    first, *others = group
    reference = speculative_settings(first)
    problems = []
    for other in others:
        for setting, value in speculative_settings(other).items():
            expected = reference[setting]
            if UNKNOWN not in (value, expected) and value != expected:
                problems.append(
                    f"{first.owner} and {other.owner} differ in {setting} ({expected} vs {value}); "
                    "prefill and decode must use identical speculative-decoding settings"
                )
    return problems


def validate_fabric_requests(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    pools = node_pools(args.resources)
    found = workers(args.resources, ConfigMaps(args.resources))
    by_resource: dict[str, list[Worker]] = {}
    for worker in found:
        by_resource.setdefault(worker.resource.urn, []).append(worker)
        for problem in fabric_problems(worker, pools):
            report_violation(f"{worker.owner}: {problem}", worker.resource.urn)
    for urn, group in by_resource.items():
        for problem in _speculative_mismatches([w for w in group if w.role != "kv-transfer"] or group):
            report_violation(problem, urn)
