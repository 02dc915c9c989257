"""The label contract between the stack's GPU node pools and the pack: a `GpuNodePool` (recorded under mocks)
plus a disaggregated target placed on it by `serving_stack.plan.serving` pass every policy, and a worker that keeps
its upstream fabric request on a pool with another EFA count per GPU is caught by fabric-requests."""

from __future__ import annotations

import dataclasses

import pytest
from aws_helpers import resolved, run_gpu_pool

from serving_stack.facts.aws import load_aws_catalog as _load_aws_catalog
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.serving import place_target
from tools.mock_runtime import RecordedResource

FABRICS = _load_aws_catalog().fabrics
from catalog_picks import pick
from policy_helpers import DGD, component, main_container

from policy.nemotron_policies.offline import evaluate, format_report

pytestmark = pytest.mark.catalog_driven
TARGET = pick(disaggregated=True, fabric="efa").id  # upstream H100: 4 EFA interfaces per worker (p5.48xlarge: 32 / 8)


@pytest.fixture(scope="module")
def pool():
    """A p5en.48xlarge pool: 16 EFA interfaces for 8 GPUs, so 2 per GPU."""
    return dataclasses.replace(resolved("p5en.48xlarge"), name="h200-efa")


@pytest.fixture(scope="module")
def node_pool_resources(pool) -> list[RecordedResource]:
    return run_gpu_pool(
        pool, pool.name, vpc_id="vpc-1", subnet_id="subnet-1", cluster_security_group_ids=["sg-1"]
    ).resources


def placed_dgd(pool) -> dict:
    recipe = load_catalog().recipe(TARGET)
    return place_target(recipe.copy_manifests()[1], recipe, pool, FABRICS)


def recorded(dgd: dict) -> RecordedResource:
    name = dgd["metadata"]["name"]
    return RecordedResource(DGD, name, f"urn:pulumi:test::nemotron-lightning::{DGD}::{name}", "", True, dgd)


def mandatory(resources: list[RecordedResource]) -> list:
    return [v for v in evaluate(resources, stack="test") if v.mandatory]


def test_the_pool_itself_passes_every_policy(node_pool_resources):
    violations = evaluate(node_pool_resources, stack="test")
    assert violations == [], format_report(violations)


def test_a_target_placed_on_the_pool_passes(node_pool_resources, pool):
    """Everything but the rules of a whole serving stack: prewarm-daemonsets (no model-cache DaemonSet here) and
    pod-security-standards (no serving namespace: the recipe's RDMA workers need its privileged level)."""
    dgd = placed_dgd(pool)
    assert main_container(component(dgd, "prefill"))["resources"]["limits"]["vpc.amazonaws.com/efa"] == str(
        pool.efa_per_gpu
    )
    found = [
        v
        for v in mandatory([*node_pool_resources, recorded(dgd)])
        if v.policy_name not in ("prewarm-daemonsets", "pod-security-standards")
    ]
    assert found == [], format_report(found)


def test_an_upstream_efa_count_on_this_pool_is_caught(node_pool_resources, pool):
    dgd = placed_dgd(pool)
    upstream = load_catalog().recipe(TARGET).dgd
    for kind in ("prefill", "decode"):
        resources = main_container(component(dgd, kind))["resources"]
        for section in ("requests", "limits"):
            resources[section]["vpc.amazonaws.com/efa"] = main_container(component(upstream, kind))["resources"][
                section
            ]["vpc.amazonaws.com/efa"]
    found = [v for v in mandatory([*node_pool_resources, recorded(dgd)]) if v.policy_name == "fabric-requests"]
    count = main_container(component(upstream, "decode"))["resources"]["limits"]["vpc.amazonaws.com/efa"]
    assert count != str(pool.efa_per_gpu), "the test needs a pool whose EFA per GPU differs from upstream's"
    assert [v.message for v in found] == [
        f"component {component(dgd, kind)['name']}: pinned to pool 'h200-efa' (fabric efa): requests vpc.amazonaws.com/efa={count}, "
        f"needs {pool.efa_per_gpu} ({pool.efa_per_gpu} per GPU x 1 nvidia.com/gpu)"
        for kind in ("prefill", "decode")
    ]
