"""Planted defects of the first class: waits that can expire before what they wait for is done.

Each test starts from a real render, checks the model is quiet about the thing it is about, then plants the
defect and checks the finding names the resource. Claims and volumes: test_rollout_volumes.py.
"""

from __future__ import annotations

from rollout_helpers import (
    RULES,
    add_dependency,
    annotate,
    findings_about,
    named,
    of_kind,
    records,
    remove_dependency,
)

from serving_stack.names import PREWARM_APP
from tools.rollout.durations import work
from tools.rollout.graph import StackGraph
from tools.rollout.schedule import go_duration_seconds

WAIT = "wait"


def _download_job(stack_records):
    (job,) = [j for j in of_kind(stack_records, "Job") if j["name"].endswith("download")]
    return job


def test_prewarm_daemonset_without_its_download_job_dependency_is_reported():
    dev = records("dev")
    job = _download_job(dev)
    (daemon_set,) = [d for d in of_kind(dev, "DaemonSet") if PREWARM_APP in d["inputs"]["metadata"]["name"]]
    add_dependency(daemon_set, job)
    assert findings_about(dev, daemon_set["name"], WAIT) == []
    remove_dependency(dev, daemon_set, job)
    (line,) = findings_about(dev, daemon_set["name"], WAIT, blocking=True)
    assert job["name"] in line
    assert job["inputs"]["metadata"]["name"] in line


def test_depending_on_a_job_that_up_does_not_wait_for_is_still_a_race():
    dev = records("dev")
    job = _download_job(dev)
    (daemon_set,) = [d for d in of_kind(dev, "DaemonSet") if PREWARM_APP in d["inputs"]["metadata"]["name"]]
    add_dependency(daemon_set, job)
    annotate(job, skip_await="true")
    (line,) = findings_about(dev, daemon_set["name"], WAIT, blocking=True)
    assert f"depends on {job['name']}, which `up` does not wait for" in line


def test_job_whose_timeout_is_shorter_than_its_deadline_is_reported():
    dev = records("dev")
    job = _download_job(dev)
    deadline_minutes = job["inputs"]["spec"]["activeDeadlineSeconds"] / 60
    job["customTimeouts"] = {"create": f"{deadline_minutes:g}m"}
    assert [line for line in findings_about(dev, job["name"], WAIT) if "activeDeadlineSeconds" in line] == []
    job["customTimeouts"] = {"create": f"{deadline_minutes - 10:g}m"}
    lines = [line for line in findings_about(dev, job["name"], WAIT, blocking=True) if "activeDeadlineSeconds" in line]
    assert len(lines) == 1
    assert f"{deadline_minutes - 10:g} min" in lines[0]


def test_job_without_custom_timeouts_gets_the_provider_default_and_is_reported():
    dev = records("dev")
    job = _download_job(dev)
    job["customTimeouts"] = {}
    (line,) = [x for x in findings_about(dev, job["name"], WAIT) if "activeDeadlineSeconds" in x]
    assert f"waits {RULES.kinds['Job'].timeout_seconds / 60:g} min" in line


def test_dgd_without_wait_for_is_reported_and_a_short_wait_for_timeout_blocks():
    dev = records("dev")
    (graph,) = of_kind(dev, "DynamoGraphDeployment")
    assert findings_about(dev, graph["name"]) == []
    annotations = graph["inputs"]["metadata"]["annotations"]
    for name in ("wait_for", "timeout_seconds"):
        annotations.pop(RULES.annotations[name])
    (line,) = findings_about(dev, graph["name"], "serve")
    assert RULES.annotations["wait_for"] in line
    annotate(graph, wait_for="condition=Ready", timeout_seconds="600")
    assert findings_about(dev, graph["name"], "serve") == []
    (line,) = [x for x in findings_about(dev, graph["name"], WAIT, blocking=True) if "startupProbe" in x]
    assert "waits 10 min" in line
    budget = max(
        c["startupProbe"]["failureThreshold"] * c["startupProbe"]["periodSeconds"]
        for component in graph["inputs"]["spec"]["components"]
        for c in component["podTemplate"]["spec"]["containers"]
        if "startupProbe" in c
    )
    annotate(graph, timeout_seconds=str(budget * 2))
    assert [x for x in findings_about(dev, graph["name"], WAIT) if "startupProbe" in x] == []


def test_helm_release_timeout_shorter_than_the_install_is_reported():
    prod = records("prod")
    release = named(prod, "dynamo-release")
    assert findings_about(prod, "dynamo-release", WAIT) == []
    release["inputs"]["timeout"] = 60
    (line,) = findings_about(prod, "dynamo-release", WAIT, blocking=True)
    assert "timeout: 60" in line
    release["inputs"].pop("timeout")
    chart_max = work(StackGraph(prod), StackGraph(prod).named("dynamo-release"), RULES).max
    default_minutes = RULES.helm["default_timeout_seconds"] / 60
    assert bool(findings_about(prod, "dynamo-release", WAIT)) == (chart_max > default_minutes)


def test_pull_secret_the_stack_creates_is_awaited_and_without_it_the_pods_are_reported():
    pulling = records("dev-pull-secret")
    (graph,) = of_kind(pulling, "DynamoGraphDeployment")
    pull_secret = graph["inputs"]["spec"]["components"][0]["podTemplate"]["spec"]["imagePullSecrets"][0]["name"]
    (secret,) = [s for s in of_kind(pulling, "Secret") if s["inputs"]["metadata"]["name"] == pull_secret]
    waiters = [r for r in pulling if r["custom"] and any(spec.get("imagePullSecrets") for spec in _pod_specs(r))]
    assert graph in waiters
    assert _download_job(pulling) in waiters
    assert all(findings_about(pulling, w["name"], WAIT) == [] for w in waiters)
    pulling.remove(secret)
    for waiter in waiters:
        (line,) = [x for x in findings_about(pulling, waiter["name"], WAIT, blocking=True) if pull_secret in x]
        assert "nothing in the stack creates" in line


def test_a_missing_secret_in_a_namespace_the_stack_does_not_create_is_not_blocking():
    pulling = records("dev-pull-secret")
    (graph,) = of_kind(pulling, "DynamoGraphDeployment")
    namespace = graph["inputs"]["metadata"]["namespace"]
    pulling[:] = [
        r
        for r in pulling
        if r["inputs"].get("kind") not in ("Namespace", "Secret")
        or r["inputs"]["metadata"].get("namespace", r["inputs"]["metadata"]["name"]) != namespace
    ]
    assert [x for x in findings_about(pulling, graph["name"], WAIT) if "Secret" in x] == []


def _pod_specs(record):
    inputs = record["inputs"]
    if inputs.get("kind") == "DynamoGraphDeployment":
        return [c["podTemplate"]["spec"] for c in inputs["spec"]["components"]]
    template = (inputs.get("spec") or {}).get("template") if isinstance(inputs.get("spec"), dict) else None
    return [template["spec"]] if isinstance(template, dict) and "spec" in template else []


def test_custom_timeouts_strings_parse_as_go_durations():
    assert go_duration_seconds("70m") == 4200
    assert go_duration_seconds("1h30m") == 5400
    assert go_duration_seconds("300s") == 300
