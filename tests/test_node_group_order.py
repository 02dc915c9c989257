"""The first `up`'s order on AWS: every node group of the stack (system and GPU pools) waits for the EKS add-ons
that need no nodes, as terraform-aws-eks creates its `before_compute` add-ons (the VPC CNI) before any node group."""

from __future__ import annotations

from rollout_helpers import key, records, report

from serving_stack.facts.aws import load_aws_catalog


def test_every_node_group_waits_for_the_add_ons_created_before_compute():
    """terraform-aws-eks creates `before_compute` add-ons (the VPC CNI) before any node group; the GPU pools
    joined without the CNI before. The add-ons that need no nodes are the catalog's (catalog/aws_platform.yaml)."""
    stack = records("prod")
    graph = report(stack).graph
    early = {a.name for a in load_aws_catalog().platform.eksAddons.cluster if not a.needsNodes}
    addons = [r for r in stack if r["type"] == "aws:eks/addon:Addon" and r["inputs"]["addonName"] in early]
    groups = [r for r in stack if r["type"] == "aws:eks/nodeGroup:NodeGroup"]
    assert addons and len(groups) > 1
    for group in groups:
        assert all(graph.ordered_before(key(addon), key(group)) for addon in addons), group["name"]
