"""A disaggregated target placed on a pool gets the pool's fabric profile (EFA: `vpc.amazonaws.com/efa` =
EFA per GPU x GPUs per worker, NIXL LIBFABRIC, the upstream `FI_*` env; InfiniBand: `rdma/ib: 1` and the
upstream UCX env), and every worker is pinned to its pool. Fabric profiles are held equal to the recipes."""
from __future__ import annotations

import json

import pytest

from aws_helpers import pool, resolved
from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.instance_types import load_aws_catalog
from serving_stack.plan.pinning import place_target
from serving_stack.facts.instance_types import load_aws_catalog as _load_aws_catalog

FABRICS = _load_aws_catalog().fabrics

FABRICS = load_aws_catalog().fabrics
OWNED_ENV = {var.name for profile in FABRICS.values() for var in profile.env}
EFA_RECIPES = ["vllm/disagg-h100-mtp", "vllm/disagg-h100-dflash", "vllm/disagg-h100-dspark"]
IB_RECIPES = ["vllm/disagg-h200-mtp", "vllm/disagg-h200-dflash", "vllm/disagg-h200-dspark", "vllm/disagg-b200-dspark"]
IB_H200_POOL = pool(name="h200-ib", managed=False, fabric="ib", efa_interfaces=0, instance_type=None, ami_type=None, availability_zone=None)


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
    return place_target(*recipe.copy_manifests(), recipe, on, FABRICS)[1]


@pytest.mark.parametrize("target_id", EFA_RECIPES)
def test_efa_profile_is_the_upstream_h100_fabric(target_id):
    profile = FABRICS["efa"]
    for worker in workers(load_catalog().recipe(target_id).dgd):
        container = main(worker)
        assert fabric_env(container) == [(v.name, v.value) for v in profile.env]
        assert container["resources"]["limits"][profile.resource] == "4"  # 32 EFA / 8 GPUs x 1 GPU on p5.48xlarge
        assert kv_transfer(container)["kv_connector_extra_config"]["backends"] == profile.nixlBackends


@pytest.mark.parametrize("target_id", IB_RECIPES)
def test_ib_profile_is_the_upstream_infiniband_fabric(target_id):
    profile = FABRICS["ib"]
    for worker in workers(load_catalog().recipe(target_id).dgd):
        container = main(worker)
        assert sorted(fabric_env(container)) == sorted((v.name, v.value) for v in profile.env)
        assert container["resources"]["limits"][profile.resource] == "1"
        assert "kv_connector_extra_config" not in kv_transfer(container) and profile.nixlBackends is None


def test_h200_dflash_on_a_p5en_efa_pool_gets_two_efa_and_libfabric():
    dgd = placed("vllm/disagg-h200-dflash", resolved("p5en.48xlarge"))
    upstream_h100 = main(workers(load_catalog().recipe("vllm/disagg-h100-dflash").dgd)[0])
    upstream_h200 = main(workers(load_catalog().recipe("vllm/disagg-h200-dflash").dgd)[0])
    for worker in workers(dgd):
        container = main(worker)
        for section in ("requests", "limits"):
            assert container["resources"][section]["vpc.amazonaws.com/efa"] == "2"
            assert "rdma/ib" not in container["resources"][section]
        assert kv_transfer(container)["kv_connector_extra_config"] == {"backends": ["LIBFABRIC"]}
        assert fabric_env(container) == fabric_env(upstream_h100)
        kept = [e for e in container["env"] if e["name"] not in OWNED_ENV]
        assert kept == [e for e in upstream_h200["env"] if e["name"] not in OWNED_ENV]
    assert kv_transfer(main(workers(dgd)[0]))["kv_role"] == "kv_producer"


def test_h200_dflash_on_an_ib_pool_equals_upstream_but_for_the_pool_pin():
    upstream = load_catalog().recipe("vllm/disagg-h200-dflash").dgd
    dgd = placed("vllm/disagg-h200-dflash", IB_H200_POOL)
    for before, after in zip(workers(upstream), workers(dgd)):
        expressions = after["podTemplate"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"]
        assert expressions.pop() == {"key": "nemotron.nvidia.com/pool", "operator": "In", "values": ["h200-ib"]}
        assert after == before


@pytest.mark.parametrize("instance_type, fields, efa", [
    ("p5.4xlarge", {}, "1"),
    ("p6-b200.48xlarge", {}, "1"),
    ("p6e-gb200.36xlarge", {"capacityType": "capacity-block", "capacityReservationId": "cr-0123456789abcdef0"}, "1"),
])
def test_efa_count_follows_the_pool(instance_type, fields, efa):
    gpu = resolved(instance_type, **fields).gpu
    target = {"h100": "vllm/disagg-h100-mtp", "b200": "vllm/disagg-b200-dspark", "gb200": "vllm/disagg-gb200-dspark"}[gpu]
    for worker in workers(placed(target, resolved(instance_type, **fields))):
        assert main(worker)["resources"]["limits"]["vpc.amazonaws.com/efa"] == efa


def test_workers_pinned_to_pool_and_product_frontend_left_alone():
    dgd = placed("vllm/agg-h200-mtp", resolved("p5en.48xlarge", gpuProduct="NVIDIA-H200-SXM"))
    frontend, worker = dgd["spec"]["components"]
    assert "affinity" not in frontend["podTemplate"]["spec"] and "nodeSelector" not in frontend["podTemplate"]["spec"]
    (term,) = worker["podTemplate"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H200-SXM"]},
        {"key": "nemotron.nvidia.com/pool", "operator": "In", "values": ["pool"]},
    ]
    assert "vpc.amazonaws.com/efa" not in main(worker)["resources"]["limits"]  # aggregated: no fabric


def test_gb200_frontend_follows_its_upstream_pin_to_the_pool():
    gb200 = resolved("p6e-gb200.36xlarge", capacityType="capacity-block", capacityReservationId="cr-0123456789abcdef0")
    frontend = placed("vllm/agg-gb200-mtp", gb200)["spec"]["components"][0]
    assert frontend["podTemplate"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-GB200", "nemotron.nvidia.com/pool": "pool"}


def test_a_worker_without_the_gpu_toleration_gets_it():
    recipe = load_catalog().recipe("vllm/agg-h100-mtp")
    config_map, dgd = recipe.copy_manifests()
    del dgd["spec"]["components"][1]["podTemplate"]["spec"]["tolerations"]
    _, result = place_target(config_map, dgd, recipe, resolved("p5.4xlarge"), FABRICS)
    assert result["spec"]["components"][1]["podTemplate"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert "tolerations" not in dgd["spec"]["components"][1]["podTemplate"]["spec"]  # input untouched
