"""Scaling with load in the whole program: prod with its demand's plan written in (`make plan ... WRITE=1`) and every planned target autoscaled. Each
ScaledObject validates against the vendored KEDA CRD and targets the scaling adapter of a component of a DGD
the stack creates (enabled there, its replicas ignored by Pulumi); cluster-autoscaler discovers every GPU node
group of the created cluster by the tags on its own Auto Scaling group (a GPU pool tags only when switched on);
a stack without `autoscaling` scales nothing; dev scales to zero."""

from __future__ import annotations

import crd_schemas
import pytest
from aws_helpers import inputs, run_gpu_pool
from aws_helpers import pool as h200_pool
from capacity_stacks import PROMETHEUS_URL, autoscaled_planned_targets
from plan_helpers import FACTS, plan_of
from rollout_helpers import committed_config, key, of_type, records
from stack_helpers import DGD_TYPE, run_config

from serving_stack.names import POOL_LABEL
from serving_stack.plan.autoscaling import adapter_name, node_group_autoscaler_tags

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
TAG, NODE_GROUP = "aws:autoscaling/tag:Tag", "aws:eks/nodeGroup:NodeGroup"


def _auto_prod() -> dict:
    config = committed_config("prod")
    autoscaled_planned_targets(config)
    return config


@pytest.mark.slow  # every ScaledObject of a whole run validated against the KEDA schema
def test_every_scaled_object_validates_and_targets_an_adapter_of_a_graph_of_the_stack() -> None:
    recorded, plan = records("prod-planned"), plan_of(_auto_prod())
    bounds = _auto_prod()["autoscaling"]["targets"]
    dgds = {r["inputs"]["metadata"]["name"]: r for r in of_type(recorded, DGD_TYPE)}
    (keda,) = [r for r in of_type(recorded, HELM_RELEASE) if r["inputs"]["chart"] == FACTS.autoscaling.keda.chart]
    scaled = of_type(recorded, SCALED_OBJECT)
    expected = {
        adapter_name(t.dgd["metadata"]["name"], w["name"]): (t.selected.id, w["replicas"])
        for t in plan.serving.targets
        for w in t.selected.recipe.worker_components()
    }
    assert sorted(r["inputs"]["metadata"]["name"] for r in scaled) == sorted(expected)
    for record in scaled:
        obj = record["inputs"]
        assert crd_schemas.errors(obj) == [], obj["metadata"]["name"]
        ref = obj["spec"]["scaleTargetRef"]
        assert (ref["apiVersion"], ref["kind"]) == (
            FACTS.autoscaling.scalingAdapter.apiVersion,
            FACTS.autoscaling.scalingAdapter.kind,
        )
        (graph,) = [d for name, d in dgds.items() if ref["name"].startswith(f"{name}-")]
        components = graph["inputs"]["spec"]["components"]
        (component,) = [
            c for c in components if adapter_name(graph["inputs"]["metadata"]["name"], c["name"]) == ref["name"]
        ]
        assert component["scalingAdapter"] == {}
        assert obj["metadata"]["namespace"] == graph["inputs"]["metadata"]["namespace"]
        target_id, per_set = expected[ref["name"]]
        assert (obj["spec"]["minReplicaCount"], obj["spec"]["maxReplicaCount"]) == (
            bounds[target_id]["minReplicaSets"] * per_set,
            bounds[target_id]["maxReplicaSets"] * per_set,
        )
        assert {key(keda), key(graph)} <= set(record["dependsOn"])  # KEDA's CRD first, the adapter's graph first
    for graph in dgds.values():
        assert crd_schemas.errors(graph["inputs"]) == []
        enabled = [i for i, c in enumerate(graph["inputs"]["spec"]["components"]) if "scalingAdapter" in c]
        assert enabled, graph["name"]
        assert graph["ignoreChanges"] == sorted(f"spec.components[{i}].replicas" for i in enabled)


def test_cluster_autoscaler_discovers_every_gpu_node_group_by_its_own_auto_scaling_group() -> None:
    recorded, config = records("prod-planned"), _auto_prod()
    cluster = config["aws"]["cluster"]["create"]["name"]
    chart = FACTS.autoscaling.clusterAutoscaler
    (release,) = [r for r in of_type(recorded, HELM_RELEASE) if r["inputs"]["chart"] == chart.chart]
    assert (release["inputs"]["version"], release["inputs"]["values"]["image"]["tag"]) == (
        chart.version,
        chart.imageTag,
    )
    assert release["inputs"]["values"]["autoDiscovery"]["clusterName"] == cluster
    (association,) = [
        r
        for r in of_type(recorded, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if not r["parent"].startswith("nemotron:kubernetes:Gateway::")
    ]  # the gateway has its own
    assert association["propertyDependencies"]["clusterName"] == ["aws:eks/cluster:Cluster::eks-cluster"]
    pools = {p.name: p for p in plan_of(config).pools}
    tags_by_group: dict[str, dict[str, str]] = {}
    for tag in of_type(recorded, TAG):
        (group,) = tag["propertyDependencies"]["autoscalingGroupName"]
        tags_by_group.setdefault(group, {})[tag["inputs"]["tag"]["key"]] = tag["inputs"]["tag"]["value"]
    gpu_groups = [g for g in of_type(recorded, NODE_GROUP) if POOL_LABEL in (g["inputs"].get("labels") or {})]
    assert {key(g) for g in gpu_groups} == set(tags_by_group)  # the system node group is not tagged
    for group in gpu_groups:
        pool = pools[group["inputs"]["labels"][POOL_LABEL]]
        assert tags_by_group[key(group)] == node_group_autoscaler_tags(pool, cluster)


def test_a_stack_without_autoscaling_scales_nothing() -> None:
    recorded = records("prod")
    assert of_type(recorded, SCALED_OBJECT) == []
    assert of_type(recorded, TAG) == []
    assert all(r["inputs"]["chart"] not in ("keda", "cluster-autoscaler") for r in of_type(recorded, HELM_RELEASE))
    assert all(g["ignoreChanges"] == [] for g in of_type(recorded, DGD_TYPE))


def test_dev_scales_to_zero_on_its_own_prometheus_without_cluster_autoscaler() -> None:
    config = committed_config("dev")
    (target,) = config["targets"]
    config["autoscaling"] = {
        "prometheusUrl": PROMETHEUS_URL,
        "installKeda": False,
        "targets": {target["id"]: {"minReplicaSets": 0, "maxReplicaSets": 2}},
    }
    run = run_config(config, stack="dev")
    (scaled,) = run.of_type(SCALED_OBJECT)
    assert scaled.inputs["spec"]["minReplicaCount"] == 0
    assert {t["metadata"]["serverAddress"] for t in scaled.inputs["spec"]["triggers"]} == {PROMETHEUS_URL}
    assert run.of_type(HELM_RELEASE) == []
    assert run.of_type(TAG) == []


@pytest.mark.parametrize("switched_on", [True, False])
def test_a_gpu_pool_tags_its_own_auto_scaling_group_only_when_switched_on(switched_on: bool) -> None:
    spec = h200_pool()
    pool_tags = node_group_autoscaler_tags(h200_pool(), "c1")

    run = run_gpu_pool(
        spec,
        cluster_name="c1",
        subnet_id="subnet-0aaaaaaaaaaaaaaaa",
        cluster_security_group_ids=[],
        node_managed_policies=[],
        tag_for_cluster_autoscaler=switched_on,
        cluster_autoscaler_tags=pool_tags,
    )
    recorded = inputs(run, "aws:autoscaling/tag:Tag")
    if not switched_on:
        assert recorded == []
        return
    assert {t["tag"]["key"]: t["tag"]["value"] for t in recorded} == pool_tags
    assert not any(t["tag"]["propagateAtLaunch"] for t in recorded)
    (group,) = run.of_type("aws:eks/nodeGroup:NodeGroup")
    for tag in run.of_type("aws:autoscaling/tag:Tag"):  # the ASG name is read from this pool's node group
        assert tag.parent == "nemotron:aws:GpuNodePool::gpu"
        assert tag.inputs["autoscalingGroupName"] == f"eks-{group.name}-asg"
        assert tag.property_dependencies["autoscalingGroupName"] == [f"aws:eks/nodeGroup:NodeGroup::{group.name}"]


def test_switching_the_tags_on_without_tags_is_refused() -> None:
    with pytest.raises(ValueError, match="without cluster_autoscaler_tags"):
        run_gpu_pool(
            h200_pool(),
            cluster_name="c1",
            subnet_id="subnet-0aaaaaaaaaaaaaaaa",
            cluster_security_group_ids=[],
            node_managed_policies=[],
            tag_for_cluster_autoscaler=True,
        )
