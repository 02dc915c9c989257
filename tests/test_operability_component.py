"""The Operability component under mocks, fed from a planned stack: one programs ConfigMap every pod mounts by
reference, per target a smoke Job after its DynamoGraphDeployment with customTimeouts covering its deadline, a
suspended benchmark CronJob, a canary Deployment after the graph, and a PodMonitor after the monitoring CRDs;
children named after the component and parented to it; switches decide what exists."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
from aws_helpers import run_components
from plan_helpers import plan_of
from stack_helpers import BASE_CONFIG, CONFIG_MAP_TYPE, DGD_TYPE

from components.monitoring import Monitoring
from components.operability import Operability, OperabilityArgs
from components.serving_target import ServingTarget, ServingTargetArgs
from serving_stack.facts.catalog import load_catalog
from serving_stack.names import TypeTokens
from tools.mock_runtime import ProgramRun, plain_numbers
from tools.rollout.schedule import go_duration_seconds

JOB, CRON_JOB = "kubernetes:batch/v1:Job", "kubernetes:batch/v1:CronJob"
DEPLOYMENT, POD_MONITOR = "kubernetes:apps/v1:Deployment", "kubernetes:monitoring.coreos.com/v1:PodMonitor"
RELEASE = "kubernetes:helm.sh/v3:Release"
TWO_TARGETS = {**BASE_CONFIG, "targets": [{"id": i} for i in sorted(load_catalog().recipes)[:2]]}


def run(raw: dict[str, Any]) -> ProgramRun:
    plan = plan_of(raw)

    def build() -> None:
        graphs: dict[str, pulumi.Resource] = {}
        for target in plan.serving.targets:
            graphs[target.selected.id] = ServingTarget(
                target.resource_name,
                ServingTargetArgs(target, namespace=plan.serving.namespace),
            ).dgd
        monitoring = Monitoring("monitoring", plan.monitoring) if plan.monitoring else None
        assert plan.operability is not None
        Operability(
            "operability",
            OperabilityArgs(
                plan.operability,
                namespace=plan.serving.namespace,
                graphs=graphs,
            ),
            opts=pulumi.ResourceOptions(depends_on=monitoring.crds_ready if monitoring else []),
        )

    return run_components(build)


def graph_of(run_: ProgramRun, resource: Any) -> str:
    """The DGD recorded for the target whose objects `resource` is one of."""
    dgd_name = resource.inputs["metadata"]["labels"]["nemotron.nvidia.com/target"]
    (graph,) = [r for r in run_.of_type(DGD_TYPE) if r.inputs["metadata"]["name"] == dgd_name]
    return f"{DGD_TYPE}::{graph.name}"


def test_every_target_gets_its_objects_in_order_after_what_they_need():
    recorded = run(TWO_TARGETS)
    (component,) = recorded.of_type(TypeTokens.OPERABILITY)
    (programs,) = [r for r in recorded.of_type(CONFIG_MAP_TYPE) if r.name == f"{component.name}-programs"]
    (crds_release,) = [r for r in recorded.of_type(RELEASE) if r.inputs["chart"] == "prometheus-operator-crds"]
    targets = len(TWO_TARGETS["targets"])
    for token in (JOB, CRON_JOB, DEPLOYMENT, POD_MONITOR):
        created = recorded.of_type(token)
        assert len(created) == targets, token
        for resource in created:
            assert resource.parent == f"{TypeTokens.OPERABILITY}::{component.name}"
            assert resource.name.startswith(f"{component.name}-")
    for job in recorded.of_type(JOB):
        assert graph_of(recorded, job) in job.depends_on
        deadline = plain_numbers(job.inputs)["spec"]["activeDeadlineSeconds"]
        assert go_duration_seconds(job.custom_timeouts["create"]) >= deadline
        assert job.custom_timeouts["update"] == job.custom_timeouts["create"]
    for deployment in recorded.of_type(DEPLOYMENT):
        assert graph_of(recorded, deployment) in deployment.depends_on
    for monitor in recorded.of_type(POD_MONITOR):
        assert f"{RELEASE}::{crds_release.name}" in monitor.depends_on  # the CRDs, not the whole stack
    for resource in recorded.of_type(JOB) + recorded.of_type(CRON_JOB) + recorded.of_type(DEPLOYMENT):
        assert f"{CONFIG_MAP_TYPE}::{programs.name}" in resource.property_dependencies["spec"]
    assert all(c.inputs["spec"]["suspend"] is True for c in recorded.of_type(CRON_JOB))


def test_the_programs_config_map_is_the_plans():
    plan = plan_of(TWO_TARGETS)
    assert plan.operability is not None
    (programs,) = [r for r in run(TWO_TARGETS).of_type(CONFIG_MAP_TYPE) if r.name == "operability-programs"]
    assert programs.inputs["data"] == plan.operability.program_config_map["data"]
    assert programs.inputs["metadata"]["namespace"] == plan.serving.namespace


def test_an_ungated_smoke_job_has_no_custom_timeouts():
    recorded = run({**TWO_TARGETS, "dynamo": {"readiness": {"wait": False}}})
    for job in recorded.of_type(JOB):
        assert job.custom_timeouts == {}
        assert job.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"


def test_switched_off_checks_are_not_created():
    raw = copy.deepcopy(TWO_TARGETS)
    raw["operability"] = {"smokeTests": {"enabled": False}, "canary": {"enabled": False}}
    recorded = run(raw)
    assert recorded.of_type(JOB) == recorded.of_type(DEPLOYMENT) == recorded.of_type(POD_MONITOR) == []
    assert len(recorded.of_type(CRON_JOB)) == len(raw["targets"])
    without_monitoring = run({**TWO_TARGETS, "monitoring": {"enabled": False}})
    assert without_monitoring.of_type(POD_MONITOR) == []
    assert len(without_monitoring.of_type(DEPLOYMENT)) == len(TWO_TARGETS["targets"])
