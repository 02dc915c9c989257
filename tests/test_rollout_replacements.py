"""Planted defects of the second class: replacements that collide with themselves or that protect refuses; and
what a real update (one render against another) replaces."""

from __future__ import annotations

import functools

from rollout_helpers import RULES, committed_config, findings_about, graph, named, of_kind, of_type, records, rendered

from serving_stack.facts.aws import load_aws_catalog
from tools.rollout.replacements import CREATE_FIRST, DELETE_FIRST, cascade, fixed_identity, predict, predict_update
from tools.rollout.replacements import REPLACE as REPLACED

REPLACE = "replace"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_GROUP_RULE = RULES.aws_types[NODE_GROUP]
# The fields a pool setting change reaches (instance type, AZ -> subnet, capacity type, disk -> launch template).
POOL_CHANGES = [
    f
    for f in RULES.replace_fields_of(NODE_GROUP)
    if f not in NODE_GROUP_RULE.unique_by + NODE_GROUP_RULE.name_fields + NODE_GROUP_RULE.generated_name_fields
]


def _gpu_node_groups(stack_records):
    return [r for r in of_type(stack_records, NODE_GROUP) if r["inputs"]["amiType"] in RULES.gpu_ami_types]


def _fix_name(pool):
    """Issue 10's defect: a fixed node_group_name instead of the generated one."""
    pool["inputs"].pop(NODE_GROUP_RULE.generated_name_fields[0], None)
    pool["inputs"][NODE_GROUP_RULE.name_fields[0]] = pool["name"]


def test_fixed_node_group_name_without_delete_before_replace_collides_on_every_pool_change():
    prod = records("prod")
    pool = _gpu_node_groups(prod)[0]
    _fix_name(pool)
    pool["deleteBeforeReplace"] = False
    stack = graph(prod)
    resource = stack.named(pool["name"])
    assert all(predict(stack, resource, RULES, field).collides for field in POOL_CHANGES)
    (line,) = findings_about(prod, pool["name"], REPLACE)
    assert f"nodeGroupName {pool['name']!r}" in line
    assert "instanceTypes" in line


def test_the_committed_pools_have_generated_names_and_replace_cleanly_create_first():
    prod = records("prod")
    stack = graph(prod)
    for pool in of_type(prod, NODE_GROUP):
        assert any(pool["inputs"].get(f) for f in NODE_GROUP_RULE.generated_name_fields), pool["name"]
        outcome = predict(stack, stack.named(pool["name"]), RULES, "instanceTypes")
        assert outcome.clean
        assert outcome.strategy == CREATE_FIRST
        assert findings_about(prod, pool["name"], REPLACE) == []


def test_delete_before_replace_avoids_the_collision_of_a_fixed_name():
    prod = records("prod")
    pool = _gpu_node_groups(prod)[0]
    _fix_name(pool)
    pool["deleteBeforeReplace"] = True
    stack = graph(prod)
    outcome = predict(stack, stack.named(pool["name"]), RULES, "instanceTypes")
    assert outcome.clean
    assert outcome.strategy == DELETE_FIRST


@functools.cache
def _prod_with_another_instance_type() -> tuple[str, str, list[dict]]:
    """prod with its first pool on another instance type of the same GPU, count and arch (from the catalog)."""
    config = committed_config("prod")
    pool = config["aws"]["nodePools"][0]
    instances = load_aws_catalog().instance_types
    current = instances[pool["instanceType"]]
    (other, *_) = sorted(
        name
        for name, spec in instances.items()
        if name != pool["instanceType"]
        and (spec.gpu, spec.gpus, spec.arch) == (current.gpu, current.gpus, current.arch)
        and "on-demand" in spec.capacityTypes
    )
    pool["instanceType"] = other
    return pool["name"], other, rendered(config, "prod")


def test_prod_changing_a_pools_instance_type_replaces_cleanly():
    pool_name, instance_type, after = _prod_with_another_instance_type()
    changes = predict_update(records("prod"), after)
    replaced = [c for c in changes if c.action == REPLACED]
    (node_group,) = [c for c in replaced if c.resource.type == NODE_GROUP and pool_name in c.resource.name]
    assert node_group.fields == ("instanceTypes",)
    assert node_group.resource.inputs["instanceTypes"] == [instance_type]
    assert node_group.replacement.strategy == CREATE_FIRST
    for change in replaced:
        assert change.replacement.clean, f"{change.resource.name}: {change.replacement.collision or 'protected'}"
        assert not change.resource.protect


def test_the_same_update_collides_with_a_fixed_node_group_name():
    pool_name, _, after = _prod_with_another_instance_type()
    before = records("prod")
    for stack_records in (before, after := [dict(r, inputs=dict(r["inputs"])) for r in after]):
        for pool in _gpu_node_groups(stack_records):
            _fix_name(pool)
    (node_group,) = [c for c in predict_update(before, after) if c.resource.type == NODE_GROUP and c.replacement]
    assert pool_name in node_group.resource.name
    assert node_group.replacement.collides


def test_a_fixed_identity_replaced_create_first_collides():
    """Every AWS resource the program deletes before replacing because its identity is fixed (the cluster, its
    log group, access entries, the bucket's encryption setting) collides with itself without that option."""
    prod = records("prod")
    stack = graph(prod)
    fixed = [
        r["name"]
        for r in prod
        if r["deleteBeforeReplace"] and r["type"] in RULES.aws_types and fixed_identity(stack.named(r["name"]), RULES)
    ]
    assert {"aws:eks/cluster:Cluster", "aws:eks/accessEntry:AccessEntry"} <= {named(prod, n)["type"] for n in fixed}
    for name in fixed:
        planted = records("prod")
        assert findings_about(planted, name, REPLACE) == []
        named(planted, name)["deleteBeforeReplace"] = False
        (line,) = findings_about(planted, name, REPLACE, blocking=True)
        assert CREATE_FIRST in line
        assert "already exists" in line or "overwrites" in line, line


def test_protected_storage_class_blocks_its_own_replacement():
    efs = records("prod-efs")
    (storage_class,) = of_kind(efs, "StorageClass")
    assert findings_about(efs, storage_class["name"], REPLACE) == []
    storage_class["protect"] = True
    (line,) = findings_about(efs, storage_class["name"], REPLACE)
    assert "holds no data" in line
    assert "parameters" in line


def test_protect_on_a_node_group_is_a_blocked_replacement_but_on_a_file_system_it_guards_data():
    prod = records("prod")
    pool = _gpu_node_groups(prod)[0]
    pool["protect"] = True
    assert any("protected but holds no data" in x for x in findings_about(prod, pool["name"], REPLACE))
    (file_system,) = of_type(prod, "aws:fsx/lustreFileSystem:LustreFileSystem")
    assert file_system["protect"]
    stack = graph(prod)
    assert predict(stack, stack.named(file_system["name"]), RULES, "subnetIds").blocked_by_protect
    assert findings_about(prod, file_system["name"], REPLACE) == []


def test_kubernetes_objects_with_a_name_are_replaced_delete_first():
    dev = records("dev")
    stack = graph(dev)
    for resource in stack.kubernetes_objects():
        assert predict(stack, resource, RULES, "metadata.namespace").strategy == DELETE_FIRST, resource.name


def test_operator_release_moved_to_another_namespace_collides_unless_deleted_first():
    prod = records("prod")
    release = named(prod, "dynamo-release")
    assert findings_about(prod, "dynamo-release", REPLACE) == []
    release["deleteBeforeReplace"] = False
    (line,) = findings_about(prod, "dynamo-release", REPLACE)
    assert "namespace" in line
    assert release["inputs"]["name"] in line


def test_replacing_the_cluster_replaces_every_node_group_built_from_it():
    prod = records("prod")
    stack = graph(prod)
    (cluster,) = stack.of_type("aws:eks/cluster:Cluster")
    node_groups = {
        r.name for r in stack.of_type(NODE_GROUP) if cluster.key in r.property_dependencies.get("clusterName", ())
    }
    assert node_groups
    assert node_groups <= set(cascade(stack, cluster, RULES))
