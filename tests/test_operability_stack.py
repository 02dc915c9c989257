"""The whole program (the committed `Pulumi.<stack>.yaml`, as `make render` runs it) renders, for every Dynamo
endpoint it publishes, a smoke-test Job, a benchmark CronJob and a canary Deployment with its PodMonitor plus
the canary alerts; every one validates (kubernetes-validate strict; the vendored CRD schema for PodMonitors);
the policy pack and the rollout model accept them. Expected objects come from the stack's own outputs."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import crd_schemas
import kubernetes_validate
import pytest
from stack_helpers import rendered_stack

from policy.nemotron_policies.offline import evaluate
from serving_stack.names import TypeTokens
from tools.mock_runtime import ProgramRun, plain_numbers
from tools.render import kubernetes_objects
from tools.rollout import analyse
from tools.summary import WHY_A_DEPLOYMENT, summary_markdown

KUBERNETES_VERSION = "1.33.0"
OPS_PART_OF = ("app.kubernetes.io/part-of", "nemotron-ops")
ROLES = {"Job": "smoke", "CronJob": "bench", "Deployment": "canary", "PodMonitor": "canary"}


def dynamo_endpoints(run: ProgramRun) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in run.outputs["endpoints"] if e["kind"] == "dynamo"}


def ops_objects(run: ProgramRun) -> list[dict[str, Any]]:
    return [
        plain_numbers(o)
        for o in kubernetes_objects(run.resources)
        if o["metadata"].get("labels", {}).get(OPS_PART_OF[0]) == OPS_PART_OF[1]
    ]


def by_kind_and_target(run: ProgramRun) -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for obj in ops_objects(run):
        if obj["kind"] != "ConfigMap":
            key = (obj["kind"], obj["metadata"]["annotations"]["nemotron.nvidia.com/target-id"])
            assert key not in found, key
            found[key] = obj
    return found


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return rendered_stack("prod")


def test_prod_renders_smoke_benchmark_and_canary_for_every_dynamo_endpoint(prod):
    endpoints = dynamo_endpoints(prod)
    objects = by_kind_and_target(prod)
    assert set(objects) == {(kind, target) for kind in ROLES for target in endpoints}
    for (kind, target), obj in objects.items():
        dgd_name = obj["metadata"]["labels"]["nemotron.nvidia.com/target"]
        assert endpoints[target]["url"].startswith(f"http://{dgd_name}-frontend.{obj['metadata']['namespace']}.")
        assert obj["metadata"]["name"] == f"{dgd_name}-{ROLES[kind]}"
    namespaces = {o["metadata"]["namespace"] for o in ops_objects(prod)}
    assert len(namespaces) == 1


def test_every_rendered_ops_object_validates(prod):
    for obj in ops_objects(prod):
        if obj["apiVersion"].startswith("monitoring.coreos.com/"):
            assert crd_schemas.errors(obj) == [], obj["metadata"]["name"]
        else:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_prod_alerts_on_every_canary(prod):
    (rule,) = [o for o in kubernetes_objects(prod.resources) if o["kind"] == "PrometheusRule"]
    (canary,) = [g for g in rule["spec"]["groups"] if g["name"] == "nemotron-canary"]
    alerted = {(r["alert"], r["labels"]["target"]) for r in canary["rules"]}
    assert alerted == {(a, t) for a in ("NemotronCanaryFailing", "NemotronCanaryStale") for t in dynamo_endpoints(prod)}


def test_the_policy_pack_has_nothing_mandatory_against_the_ops_objects_and_would_see_a_short_image_name(prod):
    ops = [r for r in prod.resources if r.parent.startswith(f"{TypeTokens.OPERABILITY}::")]
    assert ops
    names = {r.name for r in ops}
    mandatory = [v for v in evaluate(prod.resources, None, stack="prod") if v.mandatory]
    assert [v for v in mandatory if v.urn.rsplit("::", 1)[-1] in names] == []
    (job, *_) = [r for r in ops if r.type == "kubernetes:batch/v1:Job"]
    planted = copy.deepcopy(job.inputs)
    planted["spec"]["template"]["spec"]["containers"][0]["image"] = "python:3.12-slim"
    resources = [dataclasses.replace(r, inputs=planted) if r is job else r for r in prod.resources]
    flagged = [v for v in evaluate(resources, None, stack="prod") if v.mandatory and v.urn.endswith(f"::{job.name}")]
    assert [v.policy_name for v in flagged] == ["image-pinning"]


def test_up_waits_for_each_smoke_job_longer_than_its_deadline_and_nothing_blocks(prod):
    report = analyse([r.to_json() for r in prod.resources])
    assert report.blocking == []
    smoke_steps = [
        s for s in report.timeline.steps.values() if s.resource.kind == "Job" and s.resource.name.endswith("-smoke")
    ]
    assert len(smoke_steps) == len(dynamo_endpoints(prod))
    for step in smoke_steps:
        assert step.wait is not None
        assert step.wait.timeout_seconds >= float(step.resource.inputs["spec"]["activeDeadlineSeconds"])
        graphs = [k for k in report.graph.ancestors(step.resource.key) if k.startswith("kubernetes:nvidia.com/")]
        assert len(graphs) == 1


def test_dev_smoke_tests_and_benchmarks_without_an_unscraped_canary():
    dev = rendered_stack("dev")
    kinds = {kind for kind, _ in by_kind_and_target(dev)}
    assert kinds == {"Job", "CronJob"}


def test_the_summary_lists_each_endpoints_checks_and_says_why_the_canary_is_a_deployment(prod):
    section = summary_markdown("prod", prod).split("## Smoke test, benchmark, canary", 1)[1].split("\n## ", 1)[0]
    assert WHY_A_DEPLOYMENT in section
    for (kind, target), obj in by_kind_and_target(prod).items():
        (row,) = [line for line in section.splitlines() if line.startswith(f"| `{target}` |")]
        assert f"`{obj['metadata']['name']}`" in row or kind == "PodMonitor"
