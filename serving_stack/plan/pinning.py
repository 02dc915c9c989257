"""Place a rendered target on a GPU node pool (pure: manifests in, manifests out).

| change                                   | applies to                                                  |
|------------------------------------------|-------------------------------------------------------------|
| `nemotron.nvidia.com/pool In [<pool>]`   | every nodeSelectorTerm of every worker                      |
| `nvidia.com/gpu.product` = pool product  | the workers' existing product expression (added if missing) |
| pool label + product in `nodeSelector`   | components upstream pins by `nodeSelector` (GB200 frontends)|
| toleration of the pool's GPU taint       | workers that do not tolerate it already                     |
| fabric profile of the pool               | GPU containers of disaggregated targets (`catalog/fabrics.yaml`): fabric resource, fabric env, NIXL backends of `--kv-transfer-config` |

Everything a change does not name is kept as rendered; a fabric setting that already matches the pool's
profile is left untouched, so an upstream target placed on a pool of its upstream fabric differs from
upstream by the pool pinning only.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Optional

from serving_stack.facts.catalog import Recipe
from serving_stack.facts.instance_types import FabricProfile
from serving_stack.names import (
    GPU_PRODUCT_LABEL,
    GPU_RESOURCE,
    GPU_TAINT,
    POOL_LABEL,
    WORKER_COMPONENT_TYPES,
)
from serving_stack.plan.pools import ResolvedPool

KV_TRANSFER_FLAG = "--kv-transfer-config"


def place_target(
    config_map: dict[str, Any],
    dgd: dict[str, Any],
    recipe: Recipe,
    pool: ResolvedPool,
    fabrics: Mapping[str, FabricProfile],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ConfigMap and DGD of `recipe` as they run on `pool` (inputs are not modified)."""
    placed = copy.deepcopy(dgd)
    for component in placed["spec"]["components"]:
        pod = component["podTemplate"]["spec"]
        if component["type"] in WORKER_COMPONENT_TYPES:
            _pin_to_pool(pod, pool)
            if recipe.disaggregated:
                for container in pod.get("containers", []):
                    if _gpus(container):
                        _apply_fabric(container, pool, fabrics)
        elif GPU_PRODUCT_LABEL in pod.get("nodeSelector", {}):
            pod["nodeSelector"] = {**pod["nodeSelector"], GPU_PRODUCT_LABEL: pool.gpu_product, POOL_LABEL: pool.name}
    return copy.deepcopy(config_map), placed


def _gpus(container: dict[str, Any]) -> int:
    return int(container.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0))


def _pin_to_pool(pod: dict[str, Any], pool: ResolvedPool) -> None:
    required = (
        pod.setdefault("affinity", {})
        .setdefault("nodeAffinity", {})
        .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    )
    terms = required.setdefault("nodeSelectorTerms", [])
    if not terms:
        terms.append({"matchExpressions": []})
    for term in terms:
        expressions = term.setdefault("matchExpressions", [])
        product = next((e for e in expressions if e["key"] == GPU_PRODUCT_LABEL), None)
        if product is None:
            expressions.append({"key": GPU_PRODUCT_LABEL, "operator": "In", "values": [pool.gpu_product]})
        else:
            product.update(operator="In", values=[pool.gpu_product])
        expressions.append({"key": POOL_LABEL, "operator": "In", "values": [pool.name]})
    tolerations = pod.setdefault("tolerations", [])
    if not any(_tolerates(t, GPU_TAINT) for t in tolerations):
        tolerations.append(
            {"key": GPU_TAINT["key"], "operator": "Equal", "value": GPU_TAINT["value"], "effect": GPU_TAINT["effect"]}
        )


def _tolerates(toleration: dict[str, Any], taint: Mapping[str, str]) -> bool:
    key_matches = toleration.get("key") == taint["key"] or (
        not toleration.get("key") and toleration.get("operator") == "Exists"
    )
    value_matches = toleration.get("operator") == "Exists" or toleration.get("value") == taint["value"]
    return key_matches and value_matches and toleration.get("effect") in (None, "", taint["effect"])


def _apply_fabric(container: dict[str, Any], pool: ResolvedPool, fabrics: Mapping[str, FabricProfile]) -> None:
    profile = fabrics[pool.fabric]
    owned_env = {var.name for p in fabrics.values() for var in p.env}
    wanted = {var.name: var.value for var in profile.env}
    env = []
    for var in container.get("env", []):
        if var["name"] not in owned_env:
            env.append(var)
        elif var["name"] in wanted:
            value = wanted.pop(var["name"])
            env.append(var if var.get("value") == value else {"name": var["name"], "value": value})
    container["env"] = env + [{"name": name, "value": value} for name, value in wanted.items()]

    count = pool.efa_per_gpu * _gpus(container) if profile.count == "efa-per-gpu" else 1
    fabric_resources = {p.resource for p in fabrics.values()}
    resources = container.setdefault("resources", {})
    for section in ("requests", "limits"):
        kept = {
            k: v for k, v in resources.get(section, {}).items() if k not in fabric_resources or k == profile.resource
        }
        kept[profile.resource] = str(count)
        resources[section] = kept

    args = container.get("args", [])
    for index, arg in enumerate(args):
        if arg == KV_TRANSFER_FLAG and index + 1 < len(args):
            args[index + 1] = _with_backends(args[index + 1], profile.nixlBackends)
        elif arg.startswith(KV_TRANSFER_FLAG + "="):
            args[index] = f"{KV_TRANSFER_FLAG}={_with_backends(arg.split('=', 1)[1], profile.nixlBackends)}"


def _with_backends(text: str, backends: Optional[list[str]]) -> str:
    """`--kv-transfer-config` JSON with NIXL's `backends` set (or removed, for NIXL's default)."""
    config = json.loads(text)
    extra = {k: v for k, v in config.get("kv_connector_extra_config", {}).items() if k != "backends"}
    if backends:
        extra["backends"] = list(backends)
    updated = {k: v for k, v in config.items() if k != "kv_connector_extra_config"}
    if extra:
        updated["kv_connector_extra_config"] = extra
    return text if updated == config else json.dumps(updated, separators=(",", ":"))
