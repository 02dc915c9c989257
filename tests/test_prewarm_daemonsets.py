"""One prewarm DaemonSet per GPU node pool that hosts model-cache workers, placed exactly like them."""

from __future__ import annotations

import pytest
from catalog_picks import gpu_of
from stack_helpers import BASE_CONFIG, DGD_TYPE, rendered_stack, run_config

from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.model_cache import STATE_DIR

pytestmark = pytest.mark.catalog_driven

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"


def _worker_pods(run):
    for dgd in (r.inputs for r in run.resources if r.type == DGD_TYPE):
        for component in dgd["spec"]["components"]:
            if component["type"] != "frontend":
                yield dgd["metadata"]["name"], component["podTemplate"]["spec"]


def test_one_daemon_set_per_worker_placement_in_prod():
    run = rendered_stack("prod")
    daemon_sets = {d.inputs["metadata"]["name"]: d.inputs["spec"]["template"]["spec"] for d in run.of_type(DAEMON_SET)}
    assert sorted(daemon_sets) == ["model-prewarm-b200-efa", "model-prewarm-h200-efa"]  # one per GPU pool
    for _, worker in _worker_pods(run):
        (match,) = [d for d in daemon_sets.values() if d["affinity"] == worker["affinity"]]
        assert all(t in match["tolerations"] for t in worker["tolerations"])


def test_daemon_set_warms_every_checkpoint_its_workers_load():
    run = rendered_stack("prod")
    h200 = next(d for d in run.of_type(DAEMON_SET) if d.inputs["metadata"]["name"].endswith("h200-efa"))
    env = {e["name"]: e["value"] for e in h200.inputs["spec"]["template"]["spec"]["containers"][0]["env"]}
    on_h200 = [
        e["id"]
        for e in run.outputs["endpoints"]
        if e["kind"] == "dynamo" and gpu_of(load_catalog().recipe(e["id"])) == "h200"
    ]
    assert on_h200, "prod places no target on its h200 pool"
    expected = list(dict.fromkeys(repo for target in on_h200 for repo in load_catalog().recipe(target).checkpoints))
    assert env["PREWARM_MODELS"].split(",") == expected


def test_daemon_set_is_read_only_non_root_bounded_and_low_priority():
    (daemon_set,) = rendered_stack("dev").of_type(DAEMON_SET)
    pod = daemon_set.inputs["spec"]["template"]["spec"]
    (cache,) = [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
    assert cache["persistentVolumeClaim"] == {"claimName": "shared-model-cache", "readOnly": True}
    (container,) = pod["containers"]
    assert {"name": "model-cache", "mountPath": "/model-cache", "readOnly": True} in container["volumeMounts"]
    assert container["securityContext"]["runAsNonRoot"] is True and container["securityContext"]["capabilities"] == {
        "drop": ["ALL"]
    }
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "64Gi"}
    assert container["image"] == "docker.io/library/python:3.12.8-slim"
    (init,) = pod["initContainers"]
    assert init["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}
    (priority,) = rendered_stack("dev").of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert pod["priorityClassName"] == priority.inputs["metadata"]["name"] and priority.inputs["value"] < 0


def test_workers_wait_for_their_node_and_program_ships_in_a_config_map():
    run = rendered_stack("dev")
    for _, worker in _worker_pods(run):
        (wait,) = worker["initContainers"]
        assert f"--wait-ready --state-dir {STATE_DIR} --timeout 900" in wait["command"][2]
        assert {"name": "prewarm-state", "mountPath": STATE_DIR, "readOnly": True} in wait["volumeMounts"]
    program = next(
        c
        for c in run.of_type("kubernetes:core/v1:ConfigMap")
        if c.inputs["metadata"]["name"] == "model-prewarm-program"
    )
    assert program.inputs["data"]["prewarm.py"].startswith("#!/usr/bin/env python3")


def test_prewarm_can_be_turned_off():
    run = run_config({**BASE_CONFIG, "modelCache": {"storageClassName": "efs-ap", "prewarm": {"enabled": False}}})
    assert run.of_type(DAEMON_SET) == []
    assert all("initContainers" not in worker for _, worker in _worker_pods(run))
