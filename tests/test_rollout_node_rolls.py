"""Day-2 changes that replace every GPU node: a Kubernetes-version bump, a launch-template change, an AMI
release, an instance-type change and a stack-tag change each show as "replaces every node of pool X" with
its time and GPU-hours; a change of the template's own resource tags does not. Prod renders under mocks."""

from __future__ import annotations

import copy
import functools
import json

import pytest
from bad_stack_helpers import committed
from plan_helpers import FACTS
from stack_helpers import TEST_SECRETS, run_config

from serving_stack.names import POOL_LABEL
from tools.pr_diff.markdown import render_markdown
from tools.pr_diff.records import Render
from tools.pr_diff.stack_diff import diff_stack
from tools.rollout.durations import GPU_NODE_BOOT
from tools.rollout.node_rolls import node_rolls
from tools.rollout.rules import load_rules
from tools.rollout.workloads import LAUNCH_TEMPLATE, NODE_GROUP

GPU_NODE = load_rules().span(GPU_NODE_BOOT)


def prod_raw() -> dict:
    config = committed("prod")["config"]
    return copy.deepcopy({k.split(":", 1)[1]: v for k, v in config.items() if k.startswith("nemotron-lightning:")})


@functools.cache
def records(change: str = "") -> tuple:
    raw = prod_raw()
    if change == "version":
        versions = sorted(FACTS.eks_versions.versions, key=lambda v: tuple(map(int, v.split("."))))
        current = raw["aws"]["cluster"]["create"]["kubernetesVersion"]
        raw["aws"]["cluster"]["create"]["kubernetesVersion"] = versions[versions.index(current) - 1]
    if change == "tag":
        raw["aws"]["tags"] = {**raw["aws"]["tags"], "cost-center": "ml-serving"}
    run = run_config(raw, stack="prod", secrets=TEST_SECRETS)
    return tuple(json.loads(json.dumps(r.to_json())) for r in run.resources)


def gpu_groups(recorded) -> list[dict]:
    return [r for r in recorded if r["type"] == NODE_GROUP and r["inputs"]["amiType"].endswith("NVIDIA")]


def edited(edit) -> list[dict]:
    changed = copy.deepcopy(list(records()))
    for record in changed:
        edit(record)
    return changed


def test_a_kubernetes_version_bump_replaces_every_node_of_every_pool_with_time_and_gpu_hours():
    rolls = node_rolls(records("version"), records())
    pools = {g["inputs"]["labels"][POOL_LABEL]: g for g in gpu_groups(records())}
    assert sorted(r.pool for r in rolls) == sorted(pools)
    for roll in rolls:
        group = pools[roll.pool]
        nodes = group["inputs"]["scalingConfig"]["desiredSize"]
        template = next(
            r
            for r in records()
            if r["type"] == LAUNCH_TEMPLATE and f"{r['name']}-id" == group["inputs"]["launchTemplate"]["id"]
        )
        gpus = FACTS.aws.instance_types[
            template["inputs"].get("instanceType") or group["inputs"]["instanceTypes"][0]
        ].gpus
        assert (roll.nodes, roll.gpus_per_node) == (nodes, gpus)
        assert roll.minutes == nodes * GPU_NODE.typical
        assert roll.gpu_hours == pytest.approx(nodes * gpus * GPU_NODE.typical / 60)
        assert any("Kubernetes version" in why for why in roll.why)
        assert roll.line().startswith(f"replaces every node of pool {roll.pool} ")


def test_a_stack_tag_change_rolls_the_gpu_nodes_and_says_it_is_the_tags():
    rolls = node_rolls(records(), records("tag"))
    assert rolls and all(any("stack tag" in why for why in r.why) for r in rolls)


def test_a_launch_template_change_an_ami_release_and_an_instance_type_roll_the_pool():
    (first, *_) = gpu_groups(records())
    template_id = first["inputs"]["launchTemplate"]["id"]

    def template(record):
        if record["type"] == LAUNCH_TEMPLATE and f"{record['name']}-id" == template_id:
            record["inputs"]["metadataOptions"] = {**record["inputs"]["metadataOptions"], "httpPutResponseHopLimit": 2}

    def release(record):
        if record["name"] == first["name"]:
            record["inputs"]["releaseVersion"] = "1.35.0-20261201"

    def instance(record):
        if record["name"] == first["name"]:
            record["inputs"]["amiType"] = "AL2023_ARM_64_NVIDIA"

    for edit, expected in (
        (template, "the launch template changed"),
        (release, "AMI release"),
        (instance, "node group is replaced"),
    ):
        (roll,) = node_rolls(records(), edited(edit))
        assert roll.pool == first["inputs"]["labels"][POOL_LABEL]
        assert any(expected in why for why in roll.why), roll.why


def test_the_templates_own_resource_tags_do_not_roll_nodes():
    def tags(record):
        if record["type"] == LAUNCH_TEMPLATE:
            record["inputs"]["tags"] = {**(record["inputs"].get("tags") or {}), "note": "x"}

    assert node_rolls(records(), edited(tags)) == []


def test_make_diff_names_the_replaced_pools():
    base = Render.from_records(list(records("version")), {})
    head = Render.from_records(list(records()), {})
    text = render_markdown(diff_stack("prod", base, head, load_rules()), "base", "head")
    first, lead = text.splitlines()[0], text.split("<details>")[0]
    for group in gpu_groups(records()):
        pool = group["inputs"]["labels"][POOL_LABEL]
        assert f"`{pool}` (~" in first and f"Every node of GPU pool `{pool}` replaced" in lead
