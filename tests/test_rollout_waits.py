"""Planted defects of the first class: waits that can expire before what they wait for is done.

Each test starts from a real render, repairs the one thing it is about (so it holds before and after the
program fixes), checks the model is quiet, then plants the defect and checks the finding names the resource.
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
    secret_record,
)

from tools.rollout.awaits import go_duration_seconds

WAIT = "wait"


def _download_job(stack_records):
    (job,) = [j for j in of_kind(stack_records, "Job") if j["name"].endswith("download")]
    return job


def test_prewarm_daemonset_without_its_download_job_dependency_is_reported():
    dev = records("dev")
    job = _download_job(dev)
    (daemon_set,) = of_kind(dev, "DaemonSet")
    add_dependency(daemon_set, job)
    assert findings_about(dev, daemon_set["name"], WAIT) == []
    remove_dependency(dev, daemon_set, job)
    (line,) = findings_about(dev, daemon_set["name"], WAIT, blocking=True)
    assert job["name"] in line and job["inputs"]["metadata"]["name"] in line


def test_depending_on_a_job_that_up_does_not_wait_for_is_still_a_race():
    dev = records("dev")
    job = _download_job(dev)
    (daemon_set,) = of_kind(dev, "DaemonSet")
    add_dependency(daemon_set, job)
    annotate(job, skip_await="true")
    (line,) = findings_about(dev, daemon_set["name"], WAIT, blocking=True)
    assert f"depends on {job['name']}, which `up` does not wait for" in line


def test_immediate_fsx_claim_without_skip_await_is_reported_and_either_remedy_clears_it():
    prod = records("prod")
    (storage_class,) = of_kind(prod, "StorageClass")
    (claim,) = of_kind(prod, "PersistentVolumeClaim")
    storage_class["inputs"]["volumeBindingMode"] = "Immediate"
    claim["inputs"]["metadata"].pop("annotations", None)
    (line,) = findings_about(prod, claim["name"], WAIT, blocking=True)
    hard_coded = RULES.kinds["PersistentVolumeClaim"].timeout_seconds / 60
    assert f"at most {hard_coded:g} min" in line and storage_class["inputs"]["provisioner"] not in line
    annotate(claim, skip_await="true")
    assert findings_about(prod, claim["name"], WAIT) == []
    claim["inputs"]["metadata"]["annotations"] = {}
    storage_class["inputs"]["volumeBindingMode"] = "WaitForFirstConsumer"
    assert findings_about(prod, claim["name"], WAIT) == []


def test_custom_timeouts_do_not_extend_the_hard_coded_claim_wait():
    prod = records("prod")
    (storage_class,) = of_kind(prod, "StorageClass")
    (claim,) = of_kind(prod, "PersistentVolumeClaim")
    storage_class["inputs"]["volumeBindingMode"] = "Immediate"
    claim["customTimeouts"] = {"create": "60m"}
    assert findings_about(prod, claim["name"], WAIT, blocking=True)


def test_job_whose_timeout_is_shorter_than_its_deadline_is_reported():
    dev = records("dev")
    job = _download_job(dev)
    deadline_minutes = job["inputs"]["spec"]["activeDeadlineSeconds"] / 60
    job["customTimeouts"] = {"create": f"{deadline_minutes:g}m"}
    assert [line for line in findings_about(dev, job["name"], WAIT) if "activeDeadlineSeconds" in line] == []
    job["customTimeouts"] = {"create": f"{deadline_minutes - 10:g}m"}
    lines = [line for line in findings_about(dev, job["name"], WAIT, blocking=True) if "activeDeadlineSeconds" in line]
    assert len(lines) == 1 and f"{deadline_minutes - 10:g} min" in lines[0]


def test_job_without_custom_timeouts_gets_the_provider_default_and_is_reported():
    dev = records("dev")
    job = _download_job(dev)
    job["customTimeouts"] = {}
    (line,) = [x for x in findings_about(dev, job["name"], WAIT) if "activeDeadlineSeconds" in x]
    assert f"waits {RULES.kinds['Job'].timeout_seconds / 60:g} min" in line


def test_dgd_without_wait_for_is_reported_and_a_short_wait_for_timeout_blocks():
    dev = records("dev")
    (graph,) = of_kind(dev, "DynamoGraphDeployment")
    (line,) = findings_about(dev, graph["name"], "serve")
    assert RULES.annotations["wait_for"] in line
    annotate(graph, wait_for="condition=Ready", timeout_seconds="600")
    assert findings_about(dev, graph["name"], "serve") == []
    (line,) = [x for x in findings_about(dev, graph["name"], WAIT, blocking=True) if "startupProbe" in x]
    assert "waits 10 min" in line
    budget = max(
        c["startupProbe"]["failureThreshold"] * c["startupProbe"]["periodSeconds"]
        for component in graph["inputs"]["spec"]["components"]
        for c in component["podTemplate"]["spec"]["containers"] if "startupProbe" in c
    )
    annotate(graph, timeout_seconds=str(budget * 2))
    assert [x for x in findings_about(dev, graph["name"], WAIT) if "startupProbe" in x] == []


def test_helm_release_timeout_shorter_than_the_install_is_reported():
    dev = records("dev")
    release = named(dev, "dynamo-release")
    release["inputs"]["timeout"] = 60
    (line,) = findings_about(dev, "dynamo-release", WAIT, blocking=True)
    assert "timeout: 60" in line
    release["inputs"].pop("timeout")
    chart_max = RULES.durations["charts"]["dynamo-platform"]["max"]
    default_minutes = RULES.helm["default_timeout_seconds"] / 60
    assert bool(findings_about(dev, "dynamo-release", WAIT)) == (chart_max > default_minutes)


def test_pull_secret_the_stack_never_creates_is_reported_and_creating_it_clears_it():
    dev = records("dev")
    (graph,) = of_kind(dev, "DynamoGraphDeployment")
    pull_secret = graph["inputs"]["spec"]["components"][0]["podTemplate"]["spec"]["imagePullSecrets"][0]["name"]
    waiting = [r for r in dev if r["custom"] and f"Secret {pull_secret}" in " ".join(findings_about(dev, r["name"], WAIT))]
    assert graph in waiting and _download_job(dev) in waiting
    namespace_name = graph["inputs"]["metadata"]["namespace"]
    (namespace,) = [n for n in of_kind(dev, "Namespace") if n["inputs"]["metadata"]["name"] == namespace_name]
    secret = secret_record(pull_secret, namespace, graph["provider"])
    dev.append(secret)
    for waiter in waiting:
        add_dependency(waiter, secret)
        assert [x for x in findings_about(dev, waiter["name"], WAIT) if pull_secret in x] == []


def test_a_missing_secret_in_a_namespace_the_stack_does_not_create_is_not_blocking():
    dev = records("dev")
    (graph,) = of_kind(dev, "DynamoGraphDeployment")
    namespace = graph["inputs"]["metadata"]["namespace"]
    dev[:] = [r for r in dev if not (r["inputs"].get("kind") == "Namespace" and r["inputs"]["metadata"]["name"] == namespace)]
    assert [x for x in findings_about(dev, graph["name"], WAIT) if "Secret" in x] == []


def test_custom_timeouts_strings_parse_as_go_durations():
    assert go_duration_seconds("70m") == 4200
    assert go_duration_seconds("1h30m") == 5400
    assert go_duration_seconds("300s") == 300
