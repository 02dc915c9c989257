"""A stack file with one GPU pool of every catalog instance type for each of On-Demand, Capacity Block and
ODCR that AWS sells it as (built from the catalog data, GB200 in its Local Zone), each GPU serving a
disaggregated target, renders with exit 0 through `tools.render` (policies and the rollout model green);
every security group the stack creates states its egress, and every node group request passes botocore."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import yaml
from aws_helpers import CLUSTER, REGION, capacity_fields, node_pool
from aws_requests import launch_template_request, node_group_request, problems

from serving_stack.facts.aws import load_aws_catalog
from serving_stack.facts.catalog import load_catalog
from tools import render
from tools.mock_runtime import PROJECT_DIR

STACK = "gpu-catalog"
VARIANTS = ("on-demand", "capacity-block", "odcr")
CATALOG = load_aws_catalog()
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"


def pools() -> list[dict]:
    return [
        node_pool(
            f"{i.gpu}-{index}-{capacity}", name, minSize=0, desiredSize=1, maxSize=4, **capacity_fields(name, capacity)
        )
        for index, (name, i) in enumerate(sorted(CATALOG.instance_types.items()))
        for capacity in VARIANTS
        if capacity in i.capacityTypes
    ]


def targets(node_pools: list[dict]) -> list[dict]:
    """A disaggregated target per GPU, on the first pool of that GPU (its workers request its fabric)."""
    chosen = []
    for gpu in dict.fromkeys(CATALOG.instance_types[p["instanceType"]].gpu for p in node_pools):
        recipe = next(
            r
            for r in load_catalog().recipes.values()
            if r.disaggregated and CATALOG.gpu_of_product(r.gpu_products[0]) == gpu
        )
        pool = next(p for p in node_pools if CATALOG.instance_types[p["instanceType"]].gpu == gpu)
        chosen.append({"id": recipe.id, "nodePool": pool["name"]})
    return chosen


def stack_file() -> dict:
    node_pools = pools()
    create = {**CLUSTER["create"], "name": "gpu-catalog"}
    return {
        "config": {
            "aws:region": REGION,
            "nemotron-lightning:kubernetes": {"namespace": "nemotron", "cluster": {"source": "eks"}},
            "nemotron-lightning:modelCache": {"storageClassName": "fsx-lustre", "size": "1200Gi"},
            "nemotron-lightning:targets": targets(node_pools),
            "nemotron-lightning:aws": {
                "region": REGION,
                "cluster": {"create": create},
                "nodePools": node_pools,
                # Every pool's node prewarms at once on the first `up`, sharing the file system's throughput
                # (tools/rollout): at 1000 MB/s/TiB each of them is warm well inside `up`'s DaemonSet wait.
                "modelCacheStorage": {
                    "backend": "fsx",
                    "fsx": {"availabilityZone": create["availabilityZones"][0], "perUnitStorageThroughput": 1000},
                },
            },
        }
    }


@functools.lru_cache(maxsize=1)
def rendered(tmp: Path) -> tuple[int, Path]:
    project = tmp / "project"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (project / name).symlink_to(PROJECT_DIR / name)
    (project / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(stack_file()))
    # as `make render`: the placeholders it holds (a documentation CIDR) are listed, not refused
    code = render.main(
        ["--stack", STACK, "--project-dir", str(project), "--out", str(tmp / "build"), "--secret-placeholders"]
    )
    return code, tmp / "build" / STACK


@pytest.fixture(scope="module")
def render_result(tmp_path_factory):
    return rendered(tmp_path_factory.mktemp("catalog-stack"))


@pytest.fixture(scope="module")
def resources(render_result) -> list[dict]:
    return json.loads((render_result[1] / "resources.json").read_text())


def of_type(resources: list[dict], type_token: str) -> list[dict]:
    return [r for r in resources if r["type"] == type_token]


def test_every_instance_type_and_variant_is_in_the_stack():
    offered = {(name, c) for name, i in CATALOG.instance_types.items() for c in VARIANTS if c in i.capacityTypes}
    assert {(p["instanceType"], p["capacityType"]) for p in pools()} == offered


def test_renders_with_exit_0_policies_and_rollout_green(render_result):
    code, out = render_result
    assert code == 0, (out / "summary.md").read_text() if (out / "summary.md").exists() else "no render"
    assert "error:" not in (out / "summary.md").read_text()


def test_every_security_group_states_ingress_and_egress(resources):
    groups = of_type(resources, SECURITY_GROUP)
    assert groups
    for group in groups:
        group_id = f"{group['name']}-id"
        for rule_type in (
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
        ):
            assert any(r["inputs"]["securityGroupId"] == group_id for r in of_type(resources, rule_type)), (
                group["name"],
                rule_type,
            )


def test_every_node_group_and_launch_template_passes_botocore(resources):
    templates = of_type(resources, "aws:ec2/launchTemplate:LaunchTemplate")
    groups = of_type(resources, "aws:eks/nodeGroup:NodeGroup")
    assert len(groups) == len(templates) == len(pools()) + 1  # and the system nodes
    for template in templates:
        assert (
            problems("ec2", "CreateLaunchTemplate", launch_template_request(template["name"], template["inputs"])) == []
        )
    for group in groups:
        assert problems("eks", "CreateNodegroup", node_group_request(group["inputs"])) == []
