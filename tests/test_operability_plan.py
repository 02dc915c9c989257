"""plan.operability: each planned Dynamo target's smoke Job, benchmark CronJob and canary carry that target's
values (DGD name, served model, URL, GPUs from the outputs contract; concurrency, published row and criteria from
the catalog; the frontend's tolerations), the smoke Job gates `up` exactly when the graph is awaited, and the
`operability` block is strict."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml
from plan_helpers import FACTS, plan_of
from stack_helpers import BASE_CONFIG, PROJECT

from serving_stack.config import ConfigError
from serving_stack.plan.operability import (
    DGD_DIGEST_ANNOTATION,
    SKIP_AWAIT_ANNOTATION,
    SMOKE_WAIT_AFTER_READY_SECONDS,
    TargetChecks,
)
from serving_stack.plan.serving import startup_budget_seconds
from tools.mock_runtime import PROJECT_DIR

PROD = {
    key.split(":", 1)[1]: value
    for key, value in yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())["config"].items()
    if key.startswith(f"{PROJECT}:")
}


def args_of(manifest: dict[str, Any]) -> dict[str, str]:
    spec = manifest["spec"]
    template = spec["jobTemplate"]["spec"]["template"] if manifest["kind"] == "CronJob" else spec["template"]
    (container,) = template["spec"]["containers"]
    return dict(zip(container["args"][::2], container["args"][1::2], strict=True))


def with_block(base: dict[str, Any], **block: Any) -> dict[str, Any]:
    return {**copy.deepcopy(base), "operability": block}


def test_prod_plans_every_check_of_every_target_from_the_planned_target():
    plan = plan_of(PROD, default_region="us-east-1")
    assert plan.operability is not None
    assert plan.monitoring is not None
    checks = {c.target_id: c for c in plan.operability.targets}
    assert set(checks) == {t.selected.id for t in plan.serving.targets}
    for target in plan.serving.targets:
        check, dgd_name, endpoint = checks[target.selected.id], target.dgd["metadata"]["name"], target.endpoint
        performance = target.selected.recipe.entry.performance
        smoke, bench, canary = (
            args_of(dict(check.smoke_job)),
            args_of(dict(check.benchmark)),
            args_of(dict(check.canary)),
        )
        assert smoke["--base-url"] == canary["--base-url"] == endpoint.url
        assert smoke["--model"] == bench["--model"] == canary["--model"] == endpoint.servedModelName
        assert bench["--url"] == endpoint.url.removesuffix("/v1")
        assert bench["--concurrency"] == str(performance.concurrency)
        assert json.loads(bench["--compare"]) == {
            "target": target.selected.id,
            "gpus": endpoint.gpus,
            "performance": performance.model_dump(),
            "criteria": FACTS.catalog.criteria.model_dump(),
        }
        assert canary["--target"] == target.selected.id
        (frontend,) = [c for c in target.dgd["spec"]["components"] if c["type"] == "frontend"]
        pod = check.benchmark["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert pod["tolerations"] == frontend["podTemplate"]["spec"].get("tolerations", [])
        claim = plan.serving.model_cache_claim["metadata"]["name"]
        assert {v["name"]: v for v in pod["volumes"]}["model-cache"]["persistentVolumeClaim"]["claimName"] == claim
        names = [
            check.smoke_job["metadata"]["name"],
            check.benchmark["metadata"]["name"],
            check.canary["metadata"]["name"],
        ]
        assert names == [f"{dgd_name}-smoke", f"{dgd_name}-bench", f"{dgd_name}-canary"]
        assert check.canary_monitor["metadata"]["labels"]["release"] == plan.monitoring.release_label
        assert check.benchmark["spec"]["suspend"] is True


def test_the_smoke_job_gates_up_when_the_graph_is_awaited():
    check = plan_of(BASE_CONFIG).operability.targets[0]  # type: ignore[union-attr]
    assert check.gated
    assert args_of(dict(check.smoke_job))["--wait"] == str(SMOKE_WAIT_AFTER_READY_SECONDS)
    assert SKIP_AWAIT_ANNOTATION not in check.smoke_job["metadata"]["annotations"]
    assert check.smoke_timeout_minutes * 60 >= check.smoke_job["spec"]["activeDeadlineSeconds"]


def test_without_the_graph_wait_the_smoke_job_is_not_awaited_and_waits_for_the_graph_itself():
    raw = {**BASE_CONFIG, "dynamo": {"readiness": {"wait": False}}}
    plan = plan_of(raw)
    (check,) = plan.operability.targets  # type: ignore[union-attr]
    assert not check.gated
    assert check.smoke_job["metadata"]["annotations"][SKIP_AWAIT_ANNOTATION] == "true"
    budget = startup_budget_seconds(plan.serving.targets[0].dgd) + FACTS.platform.readiness.imagePullAllowanceSeconds
    assert args_of(dict(check.smoke_job))["--wait"] == str(budget)
    configured = plan_of(with_block(raw, smokeTests={"waitSeconds": 90})).operability.targets[0]  # type: ignore[union-attr]
    assert args_of(dict(configured.smoke_job))["--wait"] == "90"


def test_a_changed_graph_reruns_the_smoke_test_but_does_not_roll_the_canary():
    def first(raw: dict[str, Any]) -> TargetChecks:
        return plan_of(raw).operability.targets[0]  # type: ignore[union-attr]

    target_id = BASE_CONFIG["targets"][0]["id"]
    worker = FACTS.catalog.recipe(target_id).worker_components()[0]["name"]
    before = first(BASE_CONFIG)
    after = first({**BASE_CONFIG, "targets": [{"id": target_id, "replicas": {worker: 2}}]})
    digest = before.smoke_job["spec"]["template"]["metadata"]["annotations"][DGD_DIGEST_ANNOTATION]
    assert after.smoke_job["spec"]["template"]["metadata"]["annotations"][DGD_DIGEST_ANNOTATION] != digest
    assert after.canary["spec"]["template"] == before.canary["spec"]["template"]


def test_switches_decide_what_is_planned():
    assert (
        plan_of(
            with_block(
                BASE_CONFIG, smokeTests={"enabled": False}, benchmark={"enabled": False}, canary={"enabled": False}
            )
        ).operability
        is None
    )
    without_monitoring = plan_of({**BASE_CONFIG, "monitoring": {"enabled": False}}).operability
    assert without_monitoring is not None
    assert without_monitoring.canaries
    assert not without_monitoring.canary_monitors
    no_canary = plan_of(with_block(BASE_CONFIG, canary={"enabled": False}))
    assert no_canary.operability is not None
    assert not no_canary.operability.canaries
    assert no_canary.monitoring is not None
    assert "nemotron-canary" not in {g["name"] for g in no_canary.monitoring.prometheus_rule["spec"]["groups"]}
    scheduled = plan_of(with_block(BASE_CONFIG, benchmark={"schedule": "0 3 * * 0"})).operability
    assert scheduled is not None
    assert scheduled.targets[0].benchmark["spec"]["suspend"] is False


def test_the_canary_alerts_stale_after_three_configured_intervals():
    plan = plan_of(with_block(BASE_CONFIG, canary={"intervalSeconds": 120, "scrapeIntervalSeconds": 60}))
    assert plan.monitoring is not None
    (canary,) = [g for g in plan.monitoring.prometheus_rule["spec"]["groups"] if g["name"] == "nemotron-canary"]
    (stale,) = [r for r in canary["rules"] if r["alert"] == "NemotronCanaryStale"]
    assert "> 360)" in stale["expr"]
    monitor = plan.operability.targets[0].canary_monitor  # type: ignore[union-attr]
    assert monitor["spec"]["podMetricsEndpoints"][0]["interval"] == "60s"


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"canary": {"intervalSeconds": 30, "timeoutSeconds": 45}}, "operability.canary"),
        (
            {"canary": {"intervalSeconds": 30, "scrapeIntervalSeconds": 60}},
            "scrapeIntervalSeconds (60) must not exceed",
        ),
        ({"benchmark": {"schedule": "daily"}}, "operability.benchmark.schedule"),
        ({"benchmark": {"traceFile": "../etc/passwd"}}, "operability.benchmark.traceFile"),
        ({"smokeTests": {"image": "python:3.12-slim"}}, "operability.smokeTests.image"),
        ({"smokeTests": {"enabled": "yes"}}, "operability.smokeTests.enabled"),
        ({"canary": {"probe": True}}, "operability.canary.probe"),
    ],
)
def test_a_bad_operability_block_is_a_config_error_naming_the_key(block, expected):
    with pytest.raises(ConfigError) as error:
        plan_of(with_block(BASE_CONFIG, **block))
    assert expected in str(error.value)
