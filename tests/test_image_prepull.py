"""The image pre-pull DaemonSets: one per GPU pool that hosts Dynamo workers, on exactly that pool's nodes
(its EKS node group's labels and taints, as rendered), pulling exactly the images of the workers placed there,
requesting no GPU, created without waiting for the operator or the download; and the timing model starting
the pull at the node's registration, so the worker's own pull is a cache hit (first `up` and a new node)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from rollout_helpers import RULES, of_kind, of_type, records, report
from stack_helpers import BASE_CONFIG, DGD_TYPE, run_config

from serving_stack.names import PREPULL_APP
from tools.rollout.cold_start import first_dynamo_token, new_gpu_nodes
from tools.rollout.workloads import selected_node_groups

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
GPU_RESOURCE = "nvidia.com/gpu"
# EKS's taint effects (the API's enum) as the Kubernetes node carries them.
EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
PINNED = re.compile(r"@sha256:[0-9a-f]{64}$")


def _prepulls(records_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        d
        for d in of_kind(records_, "DaemonSet")
        if d["inputs"]["metadata"]["labels"]["app.kubernetes.io/name"] == PREPULL_APP
    ]


def _pod(record: dict[str, Any]) -> dict[str, Any]:
    return record["inputs"]["spec"]["template"]["spec"]


def _groups(rollout, pod: dict[str, Any]) -> list[Any]:
    return selected_node_groups(rollout.graph, pod)


def _as_set(tolerations: list[dict[str, Any]]) -> set[str]:
    return {json.dumps(t, sort_keys=True) for t in tolerations}


def placement_mismatches(pod: dict[str, Any], group: dict[str, Any]) -> list[str]:
    """What keeps the pod off the node group's nodes or lets it onto others: a required label value the group's
    labels contradict, or tolerations that differ from the group's taints."""
    labels, problems = group.get("labels") or {}, []
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    for expression in (e for term in terms for e in term.get("matchExpressions", [])):
        if expression["key"] in labels and labels[expression["key"]] not in expression["values"]:
            problems.append(f"label {expression['key']}")
    taints = [
        {"key": t["key"], "operator": "Equal", "value": t.get("value", ""), "effect": EFFECTS[t["effect"]]}
        for t in group.get("taints") or []
    ]
    if _as_set(pod.get("tolerations") or []) != _as_set(taints):
        problems.append("tolerations")
    return problems


@pytest.fixture(scope="module")
def prod():
    found = records("prod")
    return found, report(found)


def test_one_prepull_per_gpu_pool_hosting_workers_on_exactly_its_nodes(prod):
    found, rollout = prod
    gpu_groups = [g for g in of_type(found, NODE_GROUP) if g["inputs"].get("amiType") in RULES.gpu_ami_types]
    hosting = {
        g.key
        for dgd in of_kind(found, "DynamoGraphDeployment")
        for c in dgd["inputs"]["spec"]["components"]
        if c["type"] != "frontend"
        for g in _groups(rollout, c["podTemplate"]["spec"])
    }
    assert hosting and hosting <= {f"{NODE_GROUP}::{g['name']}" for g in gpu_groups}
    selected = []
    for daemon_set in _prepulls(found):
        (group,) = _groups(rollout, _pod(daemon_set))
        selected.append(group.key)
        assert placement_mismatches(_pod(daemon_set), group.inputs) == []
    assert sorted(selected) == sorted(hosting)


def test_a_planted_placement_mismatch_is_caught(prod):
    found, rollout = prod
    daemon_set = _prepulls(found)[0]
    (group,) = _groups(rollout, _pod(daemon_set))
    other_taint = {**group.inputs, "taints": [{"key": "dedicated", "value": "x", "effect": "NO_EXECUTE"}]}
    assert placement_mismatches(_pod(daemon_set), other_taint) == ["tolerations"]
    other_pool = {**group.inputs, "labels": {k: f"{v}-other" for k, v in group.inputs["labels"].items()}}
    assert "label nemotron.nvidia.com/pool" in placement_mismatches(_pod(daemon_set), other_pool)


def test_it_pulls_exactly_the_worker_images_of_its_pool_and_requests_no_gpu(prod):
    found, rollout = prod
    for daemon_set in _prepulls(found):
        (group,) = _groups(rollout, _pod(daemon_set))
        wanted = {
            container["image"]
            for dgd in of_kind(found, "DynamoGraphDeployment")
            for c in dgd["inputs"]["spec"]["components"]
            if c["type"] != "frontend" and group in _groups(rollout, c["podTemplate"]["spec"])
            for container in c["podTemplate"]["spec"]["containers"] + c["podTemplate"]["spec"].get("initContainers", [])
        }
        pod = _pod(daemon_set)
        pulls = [c["image"] for c in pod["initContainers"]]
        assert sorted(pulls) == sorted(wanted)  # each once
        assert all(c["command"] == ["true"] for c in pod["initContainers"])
        (pause,) = pod["containers"]
        assert PINNED.search(pause["image"])
        for container in pod["initContainers"] + pod["containers"]:
            assert GPU_RESOURCE not in str(container["resources"])
        assert "imagePullSecrets" not in pod  # prod's images are public, as its workers'


def test_it_waits_for_neither_the_operator_nor_the_download(prod):
    found, rollout = prod
    steps = rollout.timeline.steps
    operator_and_download = [
        steps[k]
        for k, step in steps.items()
        if step.resource.kind == "Job" or "dynamo-platform" in str(step.resource.inputs.get("chart", ""))
    ]
    assert operator_and_download
    for daemon_set in _prepulls(found):
        step = steps[f"{daemon_set['type']}::{daemon_set['name']}"]
        assert step.start < min(s.ready for s in operator_and_download)


def _of_app(run, app: str) -> list[dict[str, Any]]:
    return [
        d.inputs["spec"]["template"]["spec"]
        for d in run.of_type("kubernetes:apps/v1:DaemonSet")
        if d.inputs["metadata"]["labels"]["app.kubernetes.io/name"] == app
    ]


def test_the_workers_pull_secret_goes_with_it_and_the_switch_turns_it_off():
    secret = run_config({**BASE_CONFIG, "dynamo": {**BASE_CONFIG.get("dynamo", {}), "imagePullSecret": "ngc"}})
    workers = [
        c["podTemplate"]["spec"]
        for dgd in secret.of_type(DGD_TYPE)
        for c in dgd.inputs["spec"]["components"]
        if c["type"] != "frontend"
    ]
    expected = {json.dumps(w.get("imagePullSecrets"), sort_keys=True) for w in workers}
    pods = _of_app(secret, PREPULL_APP)
    assert pods and {json.dumps(p.get("imagePullSecrets"), sort_keys=True) for p in pods} == expected
    cache = {**BASE_CONFIG["modelCache"], "prewarm": {"prePullImages": False}}
    assert _of_app(run_config({**BASE_CONFIG, "modelCache": cache}), PREPULL_APP) == []


def _rows(path) -> dict[str, Any]:
    return {r.step: r for r in path.rows}


def test_the_pull_starts_at_registration_and_the_workers_find_the_image(prod):
    found, rollout = prod
    first = first_dynamo_token(rollout.graph, rollout.timeline, RULES)
    assert first
    (pull,) = [r for r in first.rows if PREPULL_APP in r.step and "pull" in r.step.rsplit(": ", 1)[-1]]
    graph_name = first.rows[-1].step.split(":")[0]
    dgd = next(s for s in rollout.timeline.serving() if s.resource.name == graph_name)
    daemon_set = next(d for d in _prepulls(found) if d["inputs"]["metadata"]["name"] in pull.step)
    (group,) = _groups(rollout, _pod(daemon_set))
    assert rollout.timeline.steps[group.key].ready * 60 <= pull.start < dgd.start * 60  # before the graph exists
    load = next(r for r in first.rows if r.step.endswith("model load from page cache"))
    assert load.start >= pull.end

    without = report([r for r in found if r not in _prepulls(found)])  # the same stack, every worker pulling
    before = first_dynamo_token(without.graph, without.timeline, RULES)
    assert before and before.minutes > first.minutes
    for pool in new_gpu_nodes(rollout.graph, RULES):
        rows = _rows(pool.path)
        boot, plugins = rows["GPU instance launch to kubelet registration"], rows["device plugins advertise the GPUs"]
        pulled = next(r for r in pool.path.rows if "pull" in r.step)
        assert pulled.start == plugins.start == boot.end  # beside the device plugins, not after them
    for pool in new_gpu_nodes(without.graph, RULES):
        pulled = next(r for r in pool.path.rows if "pull" in r.step)
        assert pulled.start == _rows(pool.path)["device plugins advertise the GPUs"].end
