"""Which prewarm DaemonSets a stack needs, and how workers wait for their node to be warm.

One DaemonSet per distinct worker placement (node affinity) among the selected targets: it selects
the same nodes, tolerates every taint those workers tolerate, and warms every checkpoint they load.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving_stack.config.serving import PrewarmConfig
from serving_stack.names import (
    GPU_PRODUCT_LABEL,
    POOL_LABEL,
    PREWARM_PROGRAM_CONFIG_MAP,
    WORKER_COMPONENT_TYPES,
)

PROGRAM_FILE = Path(__file__).resolve().parents[2] / "prewarm" / "prewarm.py"
PROGRAM_CONFIG_MAP = PREWARM_PROGRAM_CONFIG_MAP
WORKER_TYPES = WORKER_COMPONENT_TYPES
PROGRAM_MOUNT = "/opt/nemotron-prewarm"
STATE_DIR = "/var/lib/nemotron-prewarm"
STATE_VOLUME = "prewarm-state"
PROGRAM_VOLUME = "prewarm-program"


@dataclass(frozen=True)
class PrewarmSettings:
    """How the prewarm DaemonSets run (the memory limit is per DaemonSet: `PrewarmPool.memory_limit`)."""

    image: str
    threads: int
    cpu_limit: str
    wait_timeout_seconds: int
    host_state_dir: str  # node-local readiness files, one directory per stack: host_state_dir(namespace)

    @classmethod
    def of(cls, config: PrewarmConfig, namespace: str) -> PrewarmSettings:
        return cls(
            host_state_dir=host_state_dir(namespace),
            image=config.image,
            threads=config.threads,
            cpu_limit=config.cpuLimit,
            wait_timeout_seconds=config.waitTimeoutSeconds,
        )


@dataclass(frozen=True)
class PrewarmPool:
    """One DaemonSet. `memory_limit` must hold every checkpoint it warms: page cache is charged to the cgroup
    that reads it, so a smaller limit evicts what was just warmed."""

    name: str
    node_affinity: dict[str, Any]
    tolerations: list[dict[str, Any]]
    checkpoints: list[str]
    memory_limit: str


def _pool_name(node_affinity: dict[str, Any]) -> str:
    expressions = [
        e
        for term in node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for e in term.get("matchExpressions", [])
    ]
    by_key = {e["key"]: e["values"] for e in expressions}
    values = by_key.get(POOL_LABEL) or by_key.get(GPU_PRODUCT_LABEL) or ["gpu"]
    return re.sub(r"[^a-z0-9-]+", "-", "-".join(values).lower()).strip("-")[:40]


def prewarm_pools(
    dgds_with_checkpoints: list[tuple[dict[str, Any], list[str]]], memory_limit: Callable[[list[str]], str]
) -> list[PrewarmPool]:
    """Group the workers of the rendered DGDs by node affinity; `memory_limit` of the checkpoints one reads."""
    groups: dict[str, dict[str, Any]] = {}
    for dgd, checkpoints in dgds_with_checkpoints:
        for component in dgd["spec"]["components"]:
            if component["type"] not in WORKER_TYPES:
                continue
            pod = component["podTemplate"]["spec"]
            affinity = pod["affinity"]["nodeAffinity"]
            group = groups.setdefault(
                json.dumps(affinity, sort_keys=True), {"affinity": affinity, "tolerations": [], "checkpoints": []}
            )
            group["tolerations"] += [t for t in pod.get("tolerations", []) if t not in group["tolerations"]]
            group["checkpoints"] += [c for c in checkpoints if c not in group["checkpoints"]]
    pools = [
        PrewarmPool(
            _pool_name(g["affinity"]), g["affinity"], g["tolerations"], g["checkpoints"], memory_limit(g["checkpoints"])
        )
        for g in groups.values()
    ]
    names = [p.name for p in pools]
    return [
        dataclasses.replace(p, name=f"{p.name}-{index}") if names.count(p.name) > 1 else p
        for index, p in enumerate(pools)
    ]


def host_state_dir(namespace: str) -> str:
    """Where one stack's prewarm writes its readiness files on a node. Per namespace, so two stacks on one
    cluster (which may warm different checkpoints) never read each other's readiness."""
    return f"{STATE_DIR}/{namespace}"


def state_volume(host_dir: str) -> dict[str, Any]:
    return {"name": STATE_VOLUME, "hostPath": {"path": host_dir, "type": "DirectoryOrCreate"}}


def program_volume() -> dict[str, Any]:
    return {"name": PROGRAM_VOLUME, "configMap": {"name": PROGRAM_CONFIG_MAP}}


def gate_workers(dgd: dict[str, Any], wait_timeout_seconds: int, host_dir: str) -> None:
    """Give every worker an initContainer that waits (bounded) until its node is warm.

    It runs `prewarm.py --wait-ready` in the worker's own image (no extra pull) against the node-local
    readiness file; after `wait_timeout_seconds` it lets the worker load cold rather than never start.
    """
    for component in dgd["spec"]["components"]:
        if component["type"] not in WORKER_TYPES:
            continue
        pod = component["podTemplate"]["spec"]
        image = pod["containers"][0]["image"]
        wait = (
            f"python3 {PROGRAM_MOUNT}/prewarm.py --wait-ready --state-dir {STATE_DIR} "
            f"--timeout {wait_timeout_seconds} || echo 'node not warm after {wait_timeout_seconds}s; loading cold'"
        )
        pod["initContainers"] = [
            {
                "name": "wait-for-prewarm",
                "image": image,
                "command": ["sh", "-c", wait],
                "resources": {
                    "requests": {"cpu": "10m", "memory": "32Mi"},
                    "limits": {"cpu": "100m", "memory": "128Mi"},
                },
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [
                    {"name": STATE_VOLUME, "mountPath": STATE_DIR, "readOnly": True},
                    {"name": PROGRAM_VOLUME, "mountPath": PROGRAM_MOUNT, "readOnly": True},
                ],
            }
        ]
        pod["volumes"] = [*pod.get("volumes", []), state_volume(host_dir), program_volume()]
