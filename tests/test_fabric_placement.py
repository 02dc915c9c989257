"""A disaggregated target placed on a pool gets the pool's fabric profile (EFA: `vpc.amazonaws.com/efa` =
EFA per GPU x GPUs per worker, NIXL LIBFABRIC, the upstream `FI_*` env; InfiniBand: `rdma/ib: 1` and the
upstream UCX env), and every worker is pinned to its pool. Fabric profiles are held equal to the recipes."""

from __future__ import annotations

import json

import pytest
from aws_helpers import pool, resolved
from catalog_picks import gpu_of, pick, picks

from serving_stack.facts.aws import load_aws_catalog
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.serving import place_target

pytestmark = pytest.mark.catalog_driven
FABRICS = load_aws_catalog().fabrics
OWNED_ENV = {var.name for profile in FABRICS.values() for var in profile.env}
EFA_RECIPES = [r.id for r in picks(disaggregated=True, fabric="efa")]
IB_RECIPES = [r.id for r in picks(disaggregated=True, fabric="ib")]
CAPACITY_BLOCK = {
    "capacityType": "capacity-block",
    "capacityReservationId": "cr-0123456789abcdef0",
    "kubernetesVersion": "1.33",
}


def efa_instance_types(gpu: str) -> list[str]:
    """Instance types of this GPU with EFA, most EFA interfaces per GPU first."""
    types = load_aws_catalog().instance_types
    return sorted(
        (name for name, t in types.items() if t.gpu == gpu and t.efaInterfaces),
        key=lambda name: -types[name].efa_per_gpu,
    )


def efa_pool(gpu: str, **fields):
    name = efa_instance_types(gpu)[0]
    capacity = CAPACITY_BLOCK if "on-demand" not in load_aws_catalog().instance_types[name].capacityTypes else {}
    return resolved(name, **capacity, **fields)


def ib_pool(recipe):
    return pool(
        name=f"{gpu_of(recipe)}-ib",
        managed=False,
        gpu=gpu_of(recipe),
        gpu_product=recipe.gpu_products[0],
        fabric="ib",
        efa_interfaces=0,
        instance_type=None,
        ami_type=None,
        availability_zone=None,
    )


# An InfiniBand target upstream whose GPU also comes with EFA on EC2: the same recipe on both fabrics.
IB_WITH_EFA_TWIN = next(iter(r for r in picks(disaggregated=True, fabric="ib") if efa_instance_types(gpu_of(r))), None)


def test_the_catalog_has_upstream_targets_of_both_fabrics():
    assert EFA_RECIPES and IB_RECIPES and IB_WITH_EFA_TWIN and EFA_CASES, (
        "fabric profiles are checked against upstream recipes of each"
    )


def workers(dgd: dict) -> list[dict]:
    return [c for c in dgd["spec"]["components"] if c["type"] in ("prefill", "decode")]


def main(component: dict) -> dict:
    return component["podTemplate"]["spec"]["containers"][0]


def fabric_env(container: dict) -> list[tuple[str, str]]:
    return [(e["name"], e.get("value")) for e in container["env"] if e["name"] in OWNED_ENV]


def kv_transfer(container: dict) -> dict:
    args = container["args"]
    return json.loads(args[args.index("--kv-transfer-config") + 1])


def placed(target_id: str, on) -> dict:
    recipe = load_catalog().recipe(target_id)
    return place_target(recipe.copy_manifests()[1], recipe, on, FABRICS)


@pytest.mark.parametrize("target_id", EFA_RECIPES)
def test_efa_profile_is_the_upstream_efa_fabric(target_id):
    profile, recipe = FABRICS["efa"], load_catalog().recipe(target_id)
    per_gpu = {load_aws_catalog().instance_types[name].efa_per_gpu for name in efa_instance_types(gpu_of(recipe))}
    for worker in workers(recipe.dgd):
        container = main(worker)
        assert fabric_env(container) == [(v.name, v.value) for v in profile.env]
        # upstream sizes the request for one of the GPU's EC2 types (H100: 32 EFA / 8 GPUs on p5.48xlarge)
        assert int(container["resources"]["limits"][profile.resource]) in {
            n * recipe.gpus_per_replica(worker) for n in per_gpu
        }
        assert kv_transfer(container)["kv_connector_extra_config"]["backends"] == profile.nixlBackends


@pytest.mark.parametrize("target_id", IB_RECIPES)
def test_ib_profile_is_the_upstream_infiniband_fabric(target_id):
    profile = FABRICS["ib"]
    for worker in workers(load_catalog().recipe(target_id).dgd):
        container = main(worker)
        assert sorted(fabric_env(container)) == sorted((v.name, v.value) for v in profile.env)
        assert container["resources"]["limits"][profile.resource] == "1"
        assert "kv_connector_extra_config" not in kv_transfer(container) and profile.nixlBackends is None


def test_an_infiniband_recipe_on_an_efa_pool_gets_the_pools_efa_and_libfabric():
    recipe, efa_recipe = IB_WITH_EFA_TWIN, load_catalog().recipe(EFA_RECIPES[0])
    on = efa_pool(gpu_of(recipe))
    dgd = placed(recipe.id, on)
    upstream = main(workers(recipe.dgd)[0])
    for worker in workers(dgd):
        container = main(worker)
        for section in ("requests", "limits"):
            assert container["resources"][section]["vpc.amazonaws.com/efa"] == str(
                on.efa_per_gpu * recipe.gpus_per_replica(worker)
            )
            assert "rdma/ib" not in container["resources"][section]
        assert kv_transfer(container)["kv_connector_extra_config"] == {"backends": ["LIBFABRIC"]}
        assert fabric_env(container) == fabric_env(main(workers(efa_recipe.dgd)[0]))
        kept = [e for e in container["env"] if e["name"] not in OWNED_ENV]
        assert kept == [e for e in upstream["env"] if e["name"] not in OWNED_ENV]
    assert kv_transfer(main(workers(dgd)[0]))["kv_role"] == kv_transfer(upstream)["kv_role"]


@pytest.mark.parametrize("target_id", IB_RECIPES)
def test_an_infiniband_recipe_on_an_ib_pool_equals_upstream_but_for_the_pool_pin(target_id):
    recipe = load_catalog().recipe(target_id)
    on = ib_pool(recipe)
    dgd = placed(target_id, on)
    for before, after in zip(workers(recipe.dgd), workers(dgd), strict=True):
        expressions = after["podTemplate"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"][0]["matchExpressions"]
        assert expressions.pop() == {"key": "nemotron.nvidia.com/pool", "operator": "In", "values": [on.name]}
        assert after == before


# Every EC2 type with EFA, with a disaggregated target of its GPU to place on it.
EFA_CASES = [
    (name, picks(disaggregated=True, gpu=t.gpu)[0].id)
    for name, t in sorted(load_aws_catalog().instance_types.items())
    if t.efaInterfaces and picks(disaggregated=True, gpu=t.gpu)
]


@pytest.mark.parametrize(("instance_type", "target_id"), EFA_CASES)
def test_efa_count_follows_the_pool(instance_type, target_id):
    facts = load_aws_catalog().instance_types[instance_type]
    on = resolved(instance_type, **(CAPACITY_BLOCK if ("on-demand" not in facts.capacityTypes) else {}))
    recipe = load_catalog().recipe(target_id)
    for worker in workers(placed(target_id, on)):
        assert main(worker)["resources"]["limits"]["vpc.amazonaws.com/efa"] == str(
            facts.efa_per_gpu * recipe.gpus_per_replica(worker)
        )


def test_workers_pinned_to_pool_and_product_frontend_left_alone():
    gpu = next(
        name for name, g in load_aws_catalog().gpus.items() if g.alternativeProductLabels and efa_instance_types(name)
    )
    recipe = next(
        r
        for r in picks(disaggregated=False, routing="single", gpu=gpu)
        if "nodeSelector" not in r.components[0]["podTemplate"]["spec"]
    )
    label = load_aws_catalog().gpus[gpu].alternativeProductLabels[0]
    dgd = placed(recipe.id, efa_pool(gpu, gpuProduct=label))
    frontend, worker = dgd["spec"]["components"]
    assert frontend == recipe.components[0]
    (term,) = worker["podTemplate"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": [label]},
        {"key": "nemotron.nvidia.com/pool", "operator": "In", "values": ["pool"]},
    ]
    assert "vpc.amazonaws.com/efa" not in main(worker)["resources"]["limits"]  # aggregated: no fabric


def test_a_frontend_pinned_upstream_follows_its_pin_to_the_pool():
    pinned = [r for r in picks(known_gpu=True) if "nodeSelector" in r.components[0]["podTemplate"]["spec"]]
    assert pinned, "no upstream frontend carries a nodeSelector (GB200 frontends did): nothing to follow"
    recipe = pinned[0]
    frontend = placed(recipe.id, efa_pool(gpu_of(recipe)))["spec"]["components"][0]
    upstream = recipe.components[0]["podTemplate"]["spec"]["nodeSelector"]
    assert frontend["podTemplate"]["spec"]["nodeSelector"] == {**upstream, "nemotron.nvidia.com/pool": "pool"}


def test_a_worker_without_the_gpu_toleration_gets_it():
    recipe = pick(disaggregated=False, routing="single", gpu="h100")
    _, dgd = recipe.copy_manifests()
    index = next(i for i, c in enumerate(dgd["spec"]["components"]) if c["type"] == "worker")
    del dgd["spec"]["components"][index]["podTemplate"]["spec"]["tolerations"]
    result = place_target(dgd, recipe, resolved("p5.4xlarge"), FABRICS)
    assert result["spec"]["components"][index]["podTemplate"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert "tolerations" not in dgd["spec"]["components"][index]["podTemplate"]["spec"]  # input untouched
