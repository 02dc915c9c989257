"""An `autoscaling:` block that could not work stops the program with one line naming the key, before any
resource: a target the stack does not serve, no Prometheus to query, bounds the pool cannot hold,
cluster-autoscaler asked for on a cluster the stack does not create or for another Kubernetes minor."""

from __future__ import annotations

import math

from capacity_stacks import PROMETHEUS_URL, at_autoscaler_minor
from plan_helpers import FACTS, plan_of
from rollout_helpers import committed_config
from stack_helpers import assert_rejected_before_any_resource


def _scaling(stack: str, **block: object) -> dict:
    config = committed_config(stack)
    config["autoscaling"] = block
    return config


def test_a_target_the_stack_does_not_serve_is_named() -> None:
    served = {t["id"] for t in committed_config("prod")["targets"]}
    other = next(t for t in FACTS.catalog.recipes if t not in served)
    config = _scaling("prod", targets={other: {"maxReplicaSets": 2}})
    assert_rejected_before_any_resource(config, f"autoscaling.targets.{other}: not a target of this stack; allowed: ")


def test_without_monitoring_the_prometheus_url_is_required() -> None:
    config = committed_config("dev")
    assert config["monitoring"]["enabled"] is False
    config["autoscaling"] = {"targets": {config["targets"][0]["id"]: {"maxReplicaSets": 2}}}
    assert_rejected_before_any_resource(config, "autoscaling.prometheusUrl: required when the stack runs no Prometheus")


def test_the_stacks_own_prometheus_is_the_default() -> None:
    config = at_autoscaler_minor(committed_config("prod"))
    target = config["targets"][0]["id"]
    config["autoscaling"] = {"targets": {target: {"maxReplicaSets": 1}}}
    plan = plan_of(config)
    assert plan.monitoring is not None
    assert plan.capacity.serving_scaling is not None
    for obj in plan.capacity.serving_scaling.scaled_objects:
        assert {t["metadata"]["serverAddress"] for t in obj["spec"]["triggers"]} == {plan.monitoring.prometheus_url}


def test_bounds_beyond_the_pool_name_the_pool_and_the_size_it_needs() -> None:
    config = committed_config("prod")
    plan = plan_of(config)
    target = next(t for t in plan.serving.targets if t.pool is not None)
    assert target.pool is not None
    per_set = sum(
        c["replicas"] * target.selected.recipe.gpus_per_replica(c) for c in target.selected.recipe.worker_components()
    )
    too_many = target.pool.max_size * target.pool.gpus_per_node // per_set + 1
    config["autoscaling"] = {"targets": {target.selected.id: {"maxReplicaSets": too_many}}}
    others = sum(t.selected.gpus for t in plan.serving.targets if t.pool == target.pool and t is not target)
    needed = math.ceil((too_many * per_set + others) / target.pool.gpus_per_node)
    assert_rejected_before_any_resource(
        config,
        f"autoscaling.targets.{target.selected.id}.maxReplicaSets: the targets on pool {target.pool.name!r} "
        f"need {too_many * per_set + others} GPUs",
    )
    assert_rejected_before_any_resource(config, f"aws.nodePools maxSize >= {needed}")


def test_cluster_autoscaler_only_on_a_cluster_the_stack_creates() -> None:
    config = _scaling("dev", prometheusUrl=PROMETHEUS_URL, clusterAutoscaler={"enabled": True})
    assert_rejected_before_any_resource(
        config,
        "autoscaling.clusterAutoscaler.enabled: the stack installs cluster-autoscaler only on the cluster it creates",
    )


def test_cluster_autoscaler_matches_the_clusters_kubernetes_minor() -> None:
    image = FACTS.autoscaling.clusterAutoscaler.imageTag
    minor = image.removeprefix("v").rsplit(".", 1)[0]
    major, number = minor.split(".")
    config = _scaling("prod")
    config["aws"]["cluster"]["create"]["kubernetesVersion"] = f"{major}.{int(number) + 1}"
    assert_rejected_before_any_resource(config, f"aws.cluster.create.kubernetesVersion: cluster-autoscaler {image}")
