"""All 30 catalog targets, each placed on a pool of its GPU whose fabric is the recipe's upstream one, equal
the upstream manifests except for the pool pin (one matchExpression per worker term, and the pool label
beside GB200 frontends' upstream product nodeSelector). The GB200 disaggregated recipes name no fabric
resource upstream ("cluster-specific"): on an InfiniBand pool they gain `rdma/ib: 1` and nothing else."""
from __future__ import annotations

import re

import pytest
from deepdiff import DeepDiff

from aws_helpers import pool, resolved
from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.instance_types import load_aws_catalog
from serving_stack.plan.pinning import place_target
from serving_stack.facts.instance_types import load_aws_catalog as _load_aws_catalog

FABRICS = _load_aws_catalog().fabrics

CAPACITY_BLOCK = {"capacityType": "capacity-block", "capacityReservationId": "cr-0123456789abcdef0"}
EFA_POOLS = {
    "h100": resolved("p5.48xlarge"),
    "h200": resolved("p5en.48xlarge"),
    "b200": resolved("p6-b200.48xlarge"),
    "gb200": resolved("p6e-gb200.36xlarge", **CAPACITY_BLOCK),
}
PRODUCTS = {"h100": "NVIDIA-H100-80GB-HBM3", "h200": "NVIDIA-H200", "b200": "NVIDIA-B200", "gb200": "NVIDIA-GB200"}
WORKER_TERM = r"root\['spec'\]\['components'\]\[\d+\]\['podTemplate'\]\['spec'\]\['affinity'\]\['nodeAffinity'\]\['requiredDuringSchedulingIgnoredDuringExecution'\]\['nodeSelectorTerms'\]\[0\]\['matchExpressions'\]\[1\]"
FRONTEND_PIN = r"root\['spec'\]\['components'\]\[0\]\['podTemplate'\]\['spec'\]\['nodeSelector'\]\['nemotron\.nvidia\.com/pool'\]"
RDMA = r"root\['spec'\]\['components'\]\[\d+\]\['podTemplate'\]\['spec'\]\['containers'\]\[0\]\['resources'\]\['(requests|limits)'\]\['rdma/ib'\]"


def ib_pool(gpu: str):
    return pool(name=f"{gpu}-ib", managed=False, gpu=gpu, gpu_product=PRODUCTS[gpu], gpus_per_node=4 if gpu == "gb200" else 8,
                arch="arm64" if gpu == "gb200" else "x86_64", fabric="ib", efa_interfaces=0, instance_type=None)


def upstream_fabric(recipe) -> str:
    limits = [w["podTemplate"]["spec"]["containers"][0]["resources"].get("limits", {}) for w in recipe.worker_components()]
    if any("vpc.amazonaws.com/efa" in l for l in limits):
        return "efa"
    return "ib" if recipe.disaggregated else "none"


def pool_for(recipe):
    gpu = load_aws_catalog().gpu_of_product(recipe.gpu_products[0])
    return ib_pool(gpu) if recipe.disaggregated and upstream_fabric(recipe) != "efa" else EFA_POOLS[gpu]


def unexplained(recipe, pool_name: str, upstream: dict, placed: dict) -> list[str]:
    allowed = {
        "iterable_item_added": [(WORKER_TERM, {"key": "nemotron.nvidia.com/pool", "operator": "In", "values": [pool_name]})],
        "dictionary_item_added": [(FRONTEND_PIN, pool_name)],
    }
    if recipe.id.startswith("vllm/disagg-gb200"):
        allowed["dictionary_item_added"].append((RDMA, "1"))
    problems = []
    for change, items in DeepDiff(upstream, placed, view="tree").items():
        for item in items:
            ok = any(re.fullmatch(path, item.path()) and item.t2 == value for path, value in allowed.get(change, []))
            if not ok:
                problems.append(f"{recipe.id}: {change} at {item.path()}: {item.t1!r} -> {item.t2!r}")
    return problems


def test_thirty_targets():
    assert len(load_catalog().recipes) == 30


@pytest.mark.parametrize("target_id", sorted(load_catalog().recipes))
def test_placed_on_its_upstream_fabric_equals_upstream(target_id):
    recipe = load_catalog().recipe(target_id)
    on = pool_for(recipe)
    config_map, dgd = place_target(*recipe.copy_manifests(), recipe, on, FABRICS)
    assert config_map == recipe.config_map
    assert not (problems := unexplained(recipe, on.name, recipe.dgd, dgd)), "\n".join(problems)
    for worker in (c for c in dgd["spec"]["components"] if c["type"] in ("worker", "prefill", "decode")):
        terms = worker["podTemplate"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert all({"key": "nemotron.nvidia.com/pool", "operator": "In", "values": [on.name]} in t["matchExpressions"] for t in terms)


def test_the_comparison_catches_a_fabric_change():
    recipe = load_catalog().recipe("vllm/disagg-h100-mtp")
    h100_on_two_efa = pool(name="h100-p5en-like", gpu="h100", gpu_product=PRODUCTS["h100"], efa_interfaces=16)
    _, dgd = place_target(*recipe.copy_manifests(), recipe, h100_on_two_efa, FABRICS)
    problems = unexplained(recipe, "h100-p5en-like", recipe.dgd, dgd)
    assert problems and all("vpc.amazonaws.com/efa" in p and "'4' -> '2'" in p for p in problems)
