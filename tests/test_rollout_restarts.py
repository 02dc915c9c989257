"""Replacing a Secret or ConfigMap restarts nobody: a long-running workload whose pod template carries no checksum
of what it reads keeps the old values (a warning naming it); one with a checksum annotation rolls."""

from __future__ import annotations

from rollout_helpers import RULES, findings_about, graph, of_kind, records, report

from tools.rollout.report import checksum_annotation, markdown, readers

RESTART = "restart"


def _templates(record):
    inputs = record["inputs"]
    if inputs["kind"] == "DynamoGraphDeployment":
        return [component["podTemplate"] for component in inputs["spec"]["components"]]
    return [inputs["spec"]["template"]]


def test_graphs_roll_on_a_config_change_and_without_their_checksum_a_warning_names_them():
    dev = records("dev")
    (dgd,) = of_kind(dev, "DynamoGraphDeployment")
    stack = graph(dev)
    annotation = checksum_annotation(stack.named(dgd["name"]), RULES)
    assert annotation
    assert findings_about(dev, dgd["name"], RESTART) == []
    rollout = report(dev)
    read = [
        stack.resources[k].name
        for k, rs in readers(rollout.graph, rollout.timeline, RULES).items()
        if any(r.workload.name == dgd["name"] for r in rs)
    ]
    rows = [line for line in markdown(rollout).splitlines() if any(line.startswith(f"| {name} |") for name in read)]
    assert len(rows) == len(read) >= 1
    assert all(f"{dgd['name']} ({annotation})" in row and "roll" in row for row in rows)
    for template in _templates(dgd):
        template["metadata"]["annotations"].pop(annotation)
    lines = findings_about(dev, dgd["name"], RESTART)
    assert len(lines) == len(read)
    assert all("keep the old values" in line for line in lines)


def test_every_restart_warning_clears_with_a_checksum_on_the_pod_template():
    prod = records("prod")
    warned = {f.resource for f in report(prod).findings if f.category == RESTART}
    for name in warned:
        (record,) = [r for r in prod if r["name"] == name]
        for template in _templates(record):
            template.setdefault("metadata", {}).setdefault("annotations", {})["checksum/config"] = "0" * 64
        assert findings_about(prod, name, RESTART) == []


def test_jobs_and_image_pull_secrets_need_no_restart():
    pulling = records("dev-pull-secret")
    rollout = report(pulling)
    read = readers(rollout.graph, rollout.timeline, RULES)
    pull = [
        f"{s['type']}::{s['name']}"
        for s in of_kind(pulling, "Secret")
        if s["inputs"]["type"] == "kubernetes.io/dockerconfigjson"
    ]
    assert pull
    assert not any(k in read for k in pull)
    jobs = {r.workload.name for rs in read.values() for r in rs if r.workload.kind == "Job"}
    assert jobs
    assert not jobs & {f.resource for f in rollout.findings if f.category == RESTART}
