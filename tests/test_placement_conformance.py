"""Every catalog target on a GPU the data knows, each placed on a pool of its GPU whose fabric is the recipe's upstream one, equal
the upstream manifests except for the pool pin (one matchExpression per worker term, and the pool label
beside GB200 frontends' upstream product nodeSelector). The GB200 disaggregated recipes name no fabric
resource upstream ("cluster-specific"): on an InfiniBand pool they gain `rdma/ib: 1` and nothing else."""

from __future__ import annotations

import re

import pytest
from aws_helpers import pool, resolved
from catalog_picks import gpu_of, picks, upstream_fabric
from deepdiff import DeepDiff

from serving_stack.facts.aws import load_aws_catalog
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.serving import place_target

pytestmark = pytest.mark.catalog_driven
FABRICS = load_aws_catalog().fabrics
CAPACITY_BLOCK = {
    "capacityType": "capacity-block",
    "capacityReservationId": "cr-0123456789abcdef0",
    "kubernetesVersion": "1.33",
}
WORKER_TERM = r"root\['spec'\]\['components'\]\[\d+\]\['podTemplate'\]\['spec'\]\['affinity'\]\['nodeAffinity'\]\['requiredDuringSchedulingIgnoredDuringExecution'\]\['nodeSelectorTerms'\]\[0\]\['matchExpressions'\]\[1\]"
FRONTEND_PIN = (
    r"root\['spec'\]\['components'\]\[0\]\['podTemplate'\]\['spec'\]\['nodeSelector'\]\['nemotron\.nvidia\.com/pool'\]"
)
RDMA = r"root\['spec'\]\['components'\]\[\d+\]\['podTemplate'\]\['spec'\]\['containers'\]\[0\]\['resources'\]\['(requests|limits)'\]\['rdma/ib'\]"


def ib_pool(gpu: str):
    """An existing-cluster InfiniBand pool of this GPU (nodes as large as its largest EC2 type)."""
    largest = max((t for t in load_aws_catalog().instance_types.values() if t.gpu == gpu), key=lambda t: t.gpus)
    return pool(
        name=f"{gpu}-ib",
        managed=False,
        gpu=gpu,
        gpu_product=load_aws_catalog().gpus[gpu].productLabel,
        gpus_per_node=largest.gpus,
        arch=largest.arch,
        fabric="ib",
        efa_interfaces=0,
        instance_type=None,
    )


def efa_pool(gpu: str):
    """A managed pool of the GPU's EC2 type with the most EFA interfaces per GPU (upstream sizes EFA for it)."""
    types = load_aws_catalog().instance_types
    name = max((n for n, t in types.items() if t.gpu == gpu and t.efaInterfaces), key=lambda n: types[n].efa_per_gpu)
    return resolved(name, **(CAPACITY_BLOCK if ("on-demand" not in types[name].capacityTypes) else {}))


def pool_for(recipe):
    gpu = gpu_of(recipe)
    return ib_pool(gpu) if recipe.disaggregated and upstream_fabric(recipe) != "efa" else efa_pool(gpu)


def unexplained(recipe, pool_name: str, upstream: dict, placed: dict) -> list[str]:
    allowed = {
        "iterable_item_added": [
            (WORKER_TERM, {"key": "nemotron.nvidia.com/pool", "operator": "In", "values": [pool_name]})
        ],
        "dictionary_item_added": [(FRONTEND_PIN, pool_name)],
    }
    if recipe.disaggregated and upstream_fabric(recipe) == "none":  # GB200: "cluster-specific" upstream
        allowed["dictionary_item_added"].append((RDMA, "1"))
    problems = []
    for change, items in DeepDiff(upstream, placed, view="tree").items():
        for item in items:
            ok = any(re.fullmatch(path, item.path()) and item.t2 == value for path, value in allowed.get(change, []))
            if not ok:
                problems.append(f"{recipe.id}: {change} at {item.path()}: {item.t1!r} -> {item.t2!r}")
    return problems


@pytest.mark.parametrize("target_id", [r.id for r in picks(known_gpu=True)])
def test_placed_on_its_upstream_fabric_equals_upstream(target_id):
    recipe = load_catalog().recipe(target_id)
    on = pool_for(recipe)
    dgd = place_target(recipe.copy_manifests()[1], recipe, on, FABRICS)
    assert not (problems := unexplained(recipe, on.name, recipe.dgd, dgd)), "\n".join(problems)
    for worker in (c for c in dgd["spec"]["components"] if c["type"] in ("worker", "prefill", "decode")):
        terms = worker["podTemplate"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert all(
            {"key": "nemotron.nvidia.com/pool", "operator": "In", "values": [on.name]} in t["matchExpressions"]
            for t in terms
        )


def test_the_comparison_catches_a_fabric_change():
    recipe = picks(disaggregated=True, fabric="efa")[0]
    upstream = int(
        recipe.worker_components()[0]["podTemplate"]["spec"]["containers"][0]["resources"]["limits"][
            "vpc.amazonaws.com/efa"
        ]
    )
    halved = pool(
        name="halved-efa", gpu=gpu_of(recipe), gpu_product=recipe.gpu_products[0], efa_interfaces=8 * upstream // 2
    )
    dgd = place_target(recipe.copy_manifests()[1], recipe, halved, FABRICS)
    problems = unexplained(recipe, "halved-efa", recipe.dgd, dgd)
    assert problems and all(
        "vpc.amazonaws.com/efa" in p and f"'{upstream}' -> '{upstream // 2}'" in p for p in problems
    )
