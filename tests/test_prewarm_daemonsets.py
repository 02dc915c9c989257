"""One prewarm DaemonSet per GPU node pool that hosts model-cache workers, placed exactly like them."""

from __future__ import annotations

import pytest
from catalog_picks import gpu_of, gpu_of_instance
from stack_helpers import BASE_CONFIG, DGD_TYPE, rendered_stack, run_config, stack_file_config

from serving_stack.config.types import quantity_value
from serving_stack.facts.catalog import load_catalog, load_checkpoint_sizes
from serving_stack.names import PREWARM_APP
from serving_stack.plan.model_cache import STATE_DIR, prewarm_memory_limit

pytestmark = pytest.mark.catalog_driven

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"


def _prewarm_sets(run):
    """The prewarm DaemonSets (the image pre-pull ones beside them: tests/test_image_prepull.py)."""
    return [
        d for d in run.of_type(DAEMON_SET) if d.inputs["metadata"]["labels"]["app.kubernetes.io/name"] == PREWARM_APP
    ]


def _worker_pods(run):
    for dgd in (r.inputs for r in run.resources if r.type == DGD_TYPE):
        for component in dgd["spec"]["components"]:
            if component["type"] != "frontend":
                yield dgd["metadata"]["name"], component["podTemplate"]["spec"]


def test_one_daemon_set_per_worker_placement_in_prod():
    run = rendered_stack("prod")
    daemon_sets = {d.inputs["metadata"]["name"]: d.inputs["spec"]["template"]["spec"] for d in _prewarm_sets(run)}
    pools = {p["name"]: p["instanceType"] for p in stack_file_config("prod")["aws"]["nodePools"]}
    used = {gpu_of(load_catalog().recipe(e["id"])) for e in run.outputs["endpoints"] if e["kind"] == "dynamo"}
    hosting = [name for name, instance in pools.items() if gpu_of_instance(instance) in used]
    assert sorted(daemon_sets) == sorted(f"model-prewarm-{name}" for name in hosting)  # one per GPU pool used
    for _, worker in _worker_pods(run):
        (match,) = [d for d in daemon_sets.values() if d["affinity"] == worker["affinity"]]
        assert all(t in match["tolerations"] for t in worker["tolerations"])


def test_daemon_set_warms_every_checkpoint_its_workers_load():
    run = rendered_stack("prod")
    catalog, sizes = load_catalog(), load_checkpoint_sizes()
    by_gpu: dict[str, list[str]] = {}
    for endpoint in (e for e in run.outputs["endpoints"] if e["kind"] == "dynamo"):
        by_gpu.setdefault(gpu_of(catalog.recipe(endpoint["id"])), []).append(endpoint["id"])
    pools = {p["name"]: gpu_of_instance(p["instanceType"]) for p in stack_file_config("prod")["aws"]["nodePools"]}
    for daemon_set in _prewarm_sets(run):
        gpu = pools[daemon_set.inputs["metadata"]["name"].removeprefix("model-prewarm-")]
        (container,) = daemon_set.inputs["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        expected = list(dict.fromkeys(repo for t in by_gpu[gpu] for repo in catalog.recipe(t).checkpoints))
        assert env["PREWARM_MODELS"].split(",") == expected
        assert container["resources"]["limits"]["memory"] == prewarm_memory_limit(expected, sizes)


def test_a_configured_prewarm_memory_limit_applies_to_every_daemon_set():
    cache = {**BASE_CONFIG["modelCache"], "prewarm": {"memoryLimit": "300Gi"}}
    run = run_config({**BASE_CONFIG, "modelCache": cache})
    limits = {
        d.inputs["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]
        for d in _prewarm_sets(run)
    }
    assert limits == {"300Gi"}


def test_the_default_prewarm_memory_follows_the_checkpoint_sizes():
    sizes = load_checkpoint_sizes()
    (repo, size), *_ = sorted(sizes.repositories.items(), key=lambda item: -item[1].sizeGB)
    bigger = sizes.model_copy(
        update={"repositories": {**sizes.repositories, repo: size.model_copy(update={"sizeGB": size.sizeGB * 3})}}
    )
    before, after = prewarm_memory_limit([repo], sizes), prewarm_memory_limit([repo], bigger)
    assert quantity_value(after) >= bigger.size(repo).bytes > quantity_value(before) >= size.bytes


def test_daemon_set_is_read_only_non_root_bounded_and_low_priority():
    (daemon_set,) = _prewarm_sets(rendered_stack("dev"))
    pod = daemon_set.inputs["spec"]["template"]["spec"]
    (cache,) = [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
    assert cache["persistentVolumeClaim"] == {"claimName": "shared-model-cache", "readOnly": True}
    (container,) = pod["containers"]
    assert {"name": "model-cache", "mountPath": "/model-cache", "readOnly": True} in container["volumeMounts"]
    assert container["securityContext"]["runAsNonRoot"] is True and container["securityContext"]["capabilities"] == {
        "drop": ["ALL"]
    }
    warmed = next(e["value"] for e in container["env"] if e["name"] == "PREWARM_MODELS").split(",")
    memory = prewarm_memory_limit(warmed, load_checkpoint_sizes())  # the default follows the checkpoints
    assert container["resources"]["limits"] == {"cpu": "2", "memory": memory}
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
    assert _prewarm_sets(run) == []
    assert all("initContainers" not in worker for _, worker in _worker_pods(run))
