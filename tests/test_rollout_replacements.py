"""Planted defects of the second class: replacements that collide with themselves or that protect refuses."""
from __future__ import annotations

import pytest
from rollout_helpers import RULES, findings_about, graph, named, of_kind, of_type, records

from tools.rollout import analyse, markdown
from tools.rollout.replacements import CREATE_FIRST, DELETE_FIRST, cascade, predict

REPLACE = "replace"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_GROUP_RULE = RULES.aws_types[NODE_GROUP]
# The fields a pool setting change reaches (instance type, AZ -> subnet, capacity type, disk -> launch template).
POOL_CHANGES = [f for f in NODE_GROUP_RULE.replace_fields if f not in NODE_GROUP_RULE.unique_by + NODE_GROUP_RULE.name_fields
                + NODE_GROUP_RULE.generated_name_fields]


def _gpu_node_groups(stack_records):
    gpu = RULES.durations["node_groups"]["gpu_ami_types"]
    return [r for r in of_type(stack_records, NODE_GROUP) if r["inputs"]["amiType"] in gpu]


def test_fixed_node_group_name_without_delete_before_replace_collides_on_every_pool_change():
    prod = records("prod")
    pool = _gpu_node_groups(prod)[0]
    pool["inputs"]["nodeGroupName"] = pool["name"]
    pool["deleteBeforeReplace"] = False
    stack = graph(prod)
    resource = stack.named(pool["name"])
    assert all(predict(stack, resource, RULES, field).collides for field in POOL_CHANGES)
    (line,) = findings_about(prod, pool["name"], REPLACE)
    assert f"nodeGroupName {pool['name']!r}" in line and "instanceTypes" in line


def test_a_generated_node_group_name_replaces_cleanly_create_first():
    prod = records("prod")
    pool = _gpu_node_groups(prod)[0]
    pool["inputs"].pop("nodeGroupName")
    pool["inputs"]["nodeGroupNamePrefix"] = "gpu-"
    stack = graph(prod)
    outcome = predict(stack, stack.named(pool["name"]), RULES, "instanceTypes")
    assert outcome.clean and outcome.strategy == CREATE_FIRST
    assert findings_about(prod, pool["name"], REPLACE) == []


def test_delete_before_replace_avoids_the_collision_of_a_fixed_name():
    prod = records("prod")
    pool = _gpu_node_groups(prod)[0]
    pool["inputs"]["nodeGroupName"] = pool["name"]
    pool["deleteBeforeReplace"] = True
    stack = graph(prod)
    outcome = predict(stack, stack.named(pool["name"]), RULES, "instanceTypes")
    assert outcome.clean and outcome.strategy == DELETE_FIRST


@pytest.mark.xfail(strict=True, reason="issue 10 part 1: GPU node groups still use a fixed node_group_name without "
                                       "delete_before_replace; switch this on when the pools get generated names")
def test_prod_changing_a_pools_instance_type_replaces_cleanly():
    prod = records("prod")
    stack = graph(prod)
    for pool in _gpu_node_groups(prod):
        outcome = predict(stack, stack.named(pool["name"]), RULES, "instanceTypes")
        assert outcome.clean, outcome.collision


def test_protected_storage_class_blocks_its_own_replacement():
    prod = records("prod")
    (storage_class,) = of_kind(prod, "StorageClass")
    storage_class["protect"] = True
    (line,) = findings_about(prod, storage_class["name"], REPLACE)
    assert "holds no data" in line and "parameters" in line
    storage_class["protect"] = False
    assert findings_about(prod, storage_class["name"], REPLACE) == []


def test_protect_on_a_node_group_is_a_blocked_replacement_but_on_a_claim_it_guards_data():
    prod = records("prod")
    pool = _gpu_node_groups(prod)[0]
    pool["protect"] = True
    assert any("protected but holds no data" in x for x in findings_about(prod, pool["name"], REPLACE))
    (claim,) = of_kind(prod, "PersistentVolumeClaim")
    claim["protect"] = True
    stack = graph(prod)
    assert predict(stack, stack.named(claim["name"]), RULES, "spec.storageClassName").blocked_by_protect
    assert findings_about(prod, claim["name"], REPLACE) == []


def test_kubernetes_objects_with_a_name_are_replaced_delete_first():
    dev = records("dev")
    stack = graph(dev)
    for resource in stack.kubernetes_objects():
        assert predict(stack, resource, RULES, "metadata.namespace").strategy == DELETE_FIRST, resource.name


def test_operator_release_moved_to_another_namespace_collides_unless_deleted_first():
    dev = records("dev")
    release = named(dev, "dynamo-release")
    release["deleteBeforeReplace"] = False
    (line,) = findings_about(dev, "dynamo-release", REPLACE)
    assert "namespace" in line and release["inputs"]["name"] in line
    release["deleteBeforeReplace"] = True
    assert findings_about(dev, "dynamo-release", REPLACE) == []


def test_replacing_the_cluster_replaces_every_node_group_built_from_it():
    prod = records("prod")
    stack = graph(prod)
    (cluster,) = stack.of_type("aws:eks/cluster:Cluster")
    node_groups = {r.name for r in stack.of_type(NODE_GROUP) if cluster.key in r.property_dependencies.get("clusterName", ())}
    assert node_groups and node_groups <= set(cascade(stack, cluster, RULES))


def test_replacing_a_config_map_names_the_workloads_that_keep_its_old_values():
    dev = records("dev")
    (graph_record,) = of_kind(dev, "DynamoGraphDeployment")
    config_maps = [c for c in of_kind(dev, "ConfigMap") if f"ConfigMap::{c['name']}" in " ".join(graph_record["dependsOn"])]
    text = markdown(analyse(dev))
    rows = [line for line in text.splitlines() if any(line.startswith(f"| {c['name']} |") for c in config_maps)]
    assert rows and all(f"running pods of {graph_record['name']}" in row for row in rows)
