"""Scaling with load: every ScaledObject validates against the vendored KEDA CRD and targets the scaling
adapter the operator creates for a component of a DGD the stack renders (with the adapter enabled and
the DGD still valid); the components register what they should; node-group tags and the IAM policy."""

from __future__ import annotations

import json

import crd_schemas
import jsonschema
import pytest
import yaml
from aws_helpers import inputs, run_components, the
from capacity_demands import CATALOG, CRITERIA, ROWS
from plan_helpers import plan_of
from rollout_helpers import committed_config
from stack_helpers import all_targets_config, rendered_stack, run_config

from components.autoscaling import (
    ClusterAutoscaler,
    ClusterAutoscalerArgs,
    ServingAutoscaler,
    ServingAutoscalerArgs,
)
from serving_stack.facts.aws import load_autoscaling
from serving_stack.plan.capacity import (
    ScalingBehaviour,
    adapter_name,
    cluster_autoscaler_policy,
    cluster_autoscaler_values,
    component_scalings,
    enable_scaling_adapters,
    ignored_replica_paths,
    node_group_autoscaler_tags,
    scaled_object,
)
from tools.mock_runtime import PROJECT_DIR, plain_numbers
from tools.render import kubernetes_objects

FACTS = load_autoscaling()
ROW_OF_DGD = {CATALOG.recipe(row.target_id).name: row for row in ROWS}
CRD = yaml.safe_load((PROJECT_DIR / "schemas" / "crds" / "keda.sh_scaledobjects.yaml").read_text())
SO_SCHEMA = next(v for v in CRD["spec"]["versions"] if v["served"] and v["storage"])["schema"]["openAPIV3Schema"]


@pytest.fixture(scope="module")
def rendered_dgds() -> list[dict]:
    return [
        o
        for o in kubernetes_objects(run_config(all_targets_config()).resources)
        if o["kind"] == "DynamoGraphDeployment"
    ]


def _objects_for(dgd: dict) -> tuple[dict, list[dict]]:
    row = ROW_OF_DGD[dgd["metadata"]["name"]]
    scalings = component_scalings(
        dgd["metadata"]["name"], row.worker_replicas, row.concurrency, 1, 4, CRITERIA.max_ttft_p50_ms, 4
    )
    objects = [
        scaled_object(
            s,
            dgd["metadata"]["namespace"],
            "http://prometheus.monitoring.svc:9090",
            FACTS.metrics.queries(),
            ScalingBehaviour(),
        )
        for s in scalings
    ]
    return enable_scaling_adapters(dgd, set(row.worker_replicas)), objects


def test_scaled_objects_validate_and_point_at_adapters_of_rendered_dgds(rendered_dgds: list[dict]) -> None:
    assert CRD["spec"]["names"]["kind"] == "ScaledObject"
    assert len(rendered_dgds) == len(ROWS)
    for dgd in rendered_dgds:
        patched, objects = _objects_for(plain_numbers(dgd))
        assert crd_schemas.errors(patched) == [], dgd["metadata"]["name"]
        enabled = {c["name"] for c in patched["spec"]["components"] if "scalingAdapter" in c}
        for obj in objects:
            assert not crd_schemas.errors(obj), obj["metadata"]["name"]
            ref = obj["spec"]["scaleTargetRef"]
            assert (ref["apiVersion"], ref["kind"]) == (FACTS.scalingAdapter.apiVersion, FACTS.scalingAdapter.kind)
            assert ref["name"] in {adapter_name(patched["metadata"]["name"], c) for c in enabled}
            assert obj["metadata"]["namespace"] == patched["metadata"]["namespace"]
            assert all(
                f'dynamo_namespace="{patched["metadata"]["namespace"]}-{patched["metadata"]["name"]}"'
                in t["metadata"]["query"]
                for t in obj["spec"]["triggers"]
            )
        paths = ignored_replica_paths(patched, enabled)
        assert [patched["spec"]["components"][int(p.split("[")[1].split("]")[0])]["name"] for p in paths] == [
            c["name"] for c in patched["spec"]["components"] if c["name"] in enabled
        ]


def test_the_schema_rejects_a_scaled_object_without_target() -> None:
    validator = jsonschema.validators.validator_for(SO_SCHEMA)(SO_SCHEMA)
    assert any(
        "scaleTargetRef" in e.message
        for e in validator.iter_errors(
            {
                "apiVersion": "keda.sh/v1alpha1",
                "kind": "ScaledObject",
                "metadata": {"name": "x"},
                "spec": {"triggers": []},
            }
        )
    )


def test_per_worker_thresholds_follow_the_measured_concurrency() -> None:
    for row in ROWS:
        for scaling in component_scalings("d", row.worker_replicas, row.concurrency, 2, 5, 1000, 4):
            per_set = row.worker_replicas[scaling.component]
            assert scaling.concurrency_per_replica * per_set == row.concurrency
            assert (scaling.min_replicas, scaling.max_replicas) == (2 * per_set, 5 * per_set)


def test_node_group_tags_let_cluster_autoscaler_scale_every_prod_pool_from_zero() -> None:
    pools = plan_of(committed_config("prod")).pools
    assert pools
    for pool in pools:
        tags = node_group_autoscaler_tags(
            "nemotron-prod", pool.node_labels, pool.gpu_product, pool.gpus_per_node, pool.efa_interfaces
        )
        prefix = "k8s.io/cluster-autoscaler/node-template"
        assert tags["k8s.io/cluster-autoscaler/enabled"] == "true"
        assert tags["k8s.io/cluster-autoscaler/nemotron-prod"] == "owned"
        assert {k.removeprefix(f"{prefix}/label/"): v for k, v in tags.items() if k.startswith(f"{prefix}/label/")} == {
            **pool.node_labels,
            "nvidia.com/gpu.product": pool.gpu_product,
        }
        assert tags[f"{prefix}/taint/nvidia.com/gpu"] == "true:NoSchedule"
        assert tags[f"{prefix}/resources/nvidia.com/gpu"] == str(pool.gpus_per_node)
        assert tags.get(f"{prefix}/resources/vpc.amazonaws.com/efa") == (
            str(pool.efa_interfaces) if pool.efa_interfaces else None
        )


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


def test_components_register_keda_scaled_objects_and_cluster_autoscaler() -> None:
    dgd = next(o for o in kubernetes_objects(rendered_stack("dev").resources) if o["kind"] == "DynamoGraphDeployment")
    _, objects = _objects_for(plain_numbers(dgd))
    ca = FACTS.clusterAutoscaler

    def build() -> None:
        ServingAutoscaler("as", ServingAutoscalerArgs(keda=FACTS.keda.pin(), install_keda=True, scaled_objects=objects))
        ClusterAutoscaler(
            "ca",
            ClusterAutoscalerArgs(
                cluster_name="c1",
                chart=ca.pin(),
                service_account=ca.serviceAccount,
                policy=cluster_autoscaler_policy("c1"),
                values=cluster_autoscaler_values("c1", "us-east-1", ca.imageTag, ca.serviceAccount),
                tags={},
            ),
        )

    run = run_components(build)
    releases = {r["chart"]: r for r in inputs(run, "kubernetes:helm.sh/v3:Release")}
    assert (releases["keda"]["version"], releases["keda"]["namespace"]) == (FACTS.keda.version, FACTS.keda.namespace)
    assert releases["cluster-autoscaler"]["version"] == ca.version
    assert releases["cluster-autoscaler"]["values"]["image"]["tag"] == ca.imageTag
    assert releases["cluster-autoscaler"]["values"]["autoDiscovery"]["clusterName"] == "c1"
    scaled = inputs(run, "kubernetes:keda.sh/v1alpha1:ScaledObject")
    assert sorted(o["metadata"]["name"] for o in scaled) == sorted(o["metadata"]["name"] for o in objects)
    assert all(
        "kubernetes:helm.sh/v3:Release::as-keda" in r.depends_on
        for r in run.of_type("kubernetes:keda.sh/v1alpha1:ScaledObject")
    )
    association = the(run, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert (association["namespace"], association["serviceAccount"]) == (ca.namespace, ca.serviceAccount)
    assert json.loads(the(run, "aws:iam/rolePolicy:RolePolicy")["policy"]) == cluster_autoscaler_policy("c1")
