"""Scaling with load, as planned for every catalog target that publishes a concurrency: each ScaledObject
validates against the vendored KEDA CRD and targets the scaling adapter the operator creates for a worker of
the target's DGD (enabled there, the DGD still valid, its replicas ignored by Pulumi); per-worker thresholds
and bounds follow the measured replica set; the components register what they should; node-group tags and
the IAM policy."""

from __future__ import annotations

import json

import crd_schemas
import jsonschema
import pytest
import yaml
from aws_helpers import inputs, run_components, the
from plan_helpers import plan_of
from rollout_helpers import committed_config
from stack_helpers import all_targets_config

from components.autoscaling import ClusterAutoscaler, ClusterAutoscalerArgs, ServingAutoscaler
from serving_stack.facts.aws import load_autoscaling
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.autoscaling import (
    ClusterScalingPlan,
    adapter_name,
    cluster_autoscaler_policy,
    cluster_autoscaler_values,
    node_group_autoscaler_tags,
)
from tools.mock_runtime import PROJECT_DIR

FACTS = load_autoscaling()
CRD = yaml.safe_load((PROJECT_DIR / "schemas" / "crds" / "keda.sh_scaledobjects.yaml").read_text())
SO_SCHEMA = next(v for v in CRD["spec"]["versions"] if v["served"] and v["storage"])["schema"]["openAPIV3Schema"]
PROMETHEUS = "http://prometheus.monitoring.svc:9090"
BOUNDS = {"minReplicaSets": 2, "maxReplicaSets": 5}


@pytest.fixture(scope="module")
def scaled_plan():  # type: ignore[no-untyped-def]
    """Every catalog target with a published concurrency under KEDA, at 2..5 replica sets."""
    ids = [r.id for r in load_catalog().recipes.values() if r.entry.performance.concurrency is not None]
    config = all_targets_config(autoscaling={"prometheusUrl": PROMETHEUS, "targets": dict.fromkeys(ids, BOUNDS)})
    return plan_of(config)


def test_scaled_objects_validate_and_point_at_adapters_of_the_rendered_dgds(scaled_plan) -> None:  # type: ignore[no-untyped-def]
    assert CRD["spec"]["names"]["kind"] == "ScaledObject"
    objects = scaled_plan.capacity.serving_scaling.scaled_objects
    by_name = {o["metadata"]["name"]: o for o in objects}
    assert len(by_name) == len(objects)
    scaled = [t for t in scaled_plan.serving.targets if t.ignored_replica_paths]
    assert {t.selected.id for t in scaled} == {
        t.selected.id for t in scaled_plan.serving.targets if t.selected.recipe.entry.performance.concurrency
    }
    expected = set()
    for target in scaled:
        dgd, name = target.dgd, target.dgd["metadata"]["name"]
        assert crd_schemas.errors(dgd) == [], name
        enabled = [i for i, c in enumerate(dgd["spec"]["components"]) if "scalingAdapter" in c]
        assert [dgd["spec"]["components"][i]["name"] for i in enabled] == list(target.selected.recipe.worker_replicas)
        assert target.ignored_replica_paths == tuple(f"spec.components[{i}].replicas" for i in enabled)
        concurrency = target.selected.recipe.entry.performance.concurrency
        for component, per_set in target.selected.recipe.worker_replicas.items():
            obj = by_name[adapter_name(name, component)]
            expected.add(obj["metadata"]["name"])
            assert not crd_schemas.errors(obj), obj["metadata"]["name"]
            spec, ref = obj["spec"], obj["spec"]["scaleTargetRef"]
            assert (ref["apiVersion"], ref["kind"], ref["name"]) == (
                FACTS.scalingAdapter.apiVersion,
                FACTS.scalingAdapter.kind,
                f"{name}-{component.lower()}",
            )
            assert obj["metadata"]["namespace"] == dgd["metadata"]["namespace"]
            assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (2 * per_set, 5 * per_set)
            triggers = {t["name"]: t["metadata"] for t in spec["triggers"]}
            assert float(triggers["inflight-per-replica"]["threshold"]) * per_set == pytest.approx(concurrency)
            selector = f'dynamo_namespace="{dgd["metadata"]["namespace"]}-{name}"'
            assert all(selector in t["query"] and t["serverAddress"] == PROMETHEUS for t in triggers.values())
    assert expected == set(by_name)


def test_the_schema_rejects_a_scaled_object_without_target() -> None:
    validator = jsonschema.validators.validator_for(SO_SCHEMA)(SO_SCHEMA)
    obj = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "x"},
        "spec": {"triggers": []},
    }
    assert any("scaleTargetRef" in e.message for e in validator.iter_errors(obj))


def test_node_group_tags_let_cluster_autoscaler_scale_every_prod_pool_from_zero() -> None:
    pools = plan_of(committed_config("prod")).pools
    assert pools
    for pool in pools:
        tags = node_group_autoscaler_tags(pool, "nemotron-prod")
        prefix = "k8s.io/cluster-autoscaler/node-template"
        assert tags["k8s.io/cluster-autoscaler/enabled"] == "true"
        assert tags["k8s.io/cluster-autoscaler/nemotron-prod"] == "owned"
        assert {k.removeprefix(f"{prefix}/label/"): v for k, v in tags.items() if k.startswith(f"{prefix}/label/")} == {
            **pool.node_labels,
            "nvidia.com/gpu.product": pool.gpu_product,
        }
        assert tags[f"{prefix}/taint/nvidia.com/gpu"] == "true:NoSchedule"
        assert tags[f"{prefix}/resources/nvidia.com/gpu"] == str(pool.gpus_per_node)
        efa = str(pool.efa_interfaces) if pool.fabric == "efa" and pool.efa_interfaces else None
        assert tags.get(f"{prefix}/resources/vpc.amazonaws.com/efa") == efa


def test_cluster_autoscaler_policy_is_least_privilege() -> None:
    policy = cluster_autoscaler_policy("c1")
    actions = [a for s in policy["Statement"] for a in s["Action"]]
    assert "*" not in actions
    assert not any(a.endswith(":*") for a in actions)
    writes = [
        s
        for s in policy["Statement"]
        if {"autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"} & set(s["Action"])
    ]
    assert len(writes) == 1
    assert writes[0]["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/c1": "owned"}}
    assert all(s["Resource"] != "*" for s in policy["Statement"] if "eks:DescribeNodegroup" in s["Action"])


def test_components_register_keda_scaled_objects_and_cluster_autoscaler(scaled_plan) -> None:  # type: ignore[no-untyped-def]
    serving = scaled_plan.capacity.serving_scaling
    ca = FACTS.clusterAutoscaler
    values = cluster_autoscaler_values("c1", "us-east-1", ca.imageTag, ca.serviceAccount)
    cluster = ClusterScalingPlan(ca, cluster_autoscaler_policy("c1"), values, {})

    def build() -> None:
        ServingAutoscaler("as", serving)
        ClusterAutoscaler("ca", ClusterAutoscalerArgs(cluster, cluster_name="c1"))

    run = run_components(build)
    releases = {r["chart"]: r for r in inputs(run, "kubernetes:helm.sh/v3:Release")}
    assert (releases["keda"]["version"], releases["keda"]["namespace"]) == (FACTS.keda.version, FACTS.keda.namespace)
    assert releases["cluster-autoscaler"]["version"] == ca.version
    assert releases["cluster-autoscaler"]["values"]["image"]["tag"] == ca.imageTag
    assert releases["cluster-autoscaler"]["values"]["autoDiscovery"]["clusterName"] == "c1"
    scaled = inputs(run, "kubernetes:keda.sh/v1alpha1:ScaledObject")
    assert sorted(o["metadata"]["name"] for o in scaled) == sorted(
        o["metadata"]["name"] for o in serving.scaled_objects
    )
    assert all(
        "kubernetes:helm.sh/v3:Release::as-keda" in r.depends_on
        for r in run.of_type("kubernetes:keda.sh/v1alpha1:ScaledObject")
    )
    association = the(run, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert (association["namespace"], association["serviceAccount"]) == (ca.namespace, ca.serviceAccount)
    assert json.loads(the(run, "aws:iam/rolePolicy:RolePolicy")["policy"]) == cluster_autoscaler_policy("c1")
