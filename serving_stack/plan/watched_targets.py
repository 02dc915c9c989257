"""What the alert rules need to know of a deployed target, read from its rendered DGD (after placement).

`kv_over_libfabric` is read from what runs, not from the catalog: a disaggregated vLLM worker whose
`--kv-transfer-config` names the NIXL LIBFABRIC backend (the EFA fabric profile sets it) is the only case
where a fallback from LIBFABRIC can happen.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from serving_stack.names import WORKER_COMPONENT_TYPES as WORKER_TYPES
from serving_stack.plan.monitoring import WatchedTarget
from serving_stack.plan.serving import KV_TRANSFER_FLAG, flag_values

LIBFABRIC = "LIBFABRIC"
FRONTEND_TYPE = "frontend"
DISAGGREGATED_TYPES = ("prefill", "decode")


def watched_target(target_id: str, dgd: dict[str, Any], published_ttft_p50_ms: Optional[float]) -> WatchedTarget:
    components = dgd["spec"]["components"]
    (frontend,) = [c["name"] for c in components if c["type"] == FRONTEND_TYPE]
    workers = [c for c in components if c["type"] in WORKER_TYPES]
    disaggregated = any(c["type"] in DISAGGREGATED_TYPES for c in workers)
    return WatchedTarget(
        target_id=target_id,
        dgd_name=dgd["metadata"]["name"],
        frontend_component=frontend,
        worker_components=tuple(c["name"] for c in workers),
        kv_over_libfabric=disaggregated and all(LIBFABRIC in _nixl_backends(c) for c in workers),
        published_ttft_p50_seconds=None if published_ttft_p50_ms is None else published_ttft_p50_ms / 1000,
    )


def _nixl_backends(component: dict[str, Any]) -> set[str]:
    return {
        backend
        for container in component["podTemplate"]["spec"].get("containers", [])
        for config in flag_values(container.get("args", [])).get(KV_TRANSFER_FLAG, [])
        for backend in json.loads(config or "{}").get("kv_connector_extra_config", {}).get("backends", [])
    }
