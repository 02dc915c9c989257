"""The `operability` block + the planned Dynamo targets -> each target's smoke Job, benchmark CronJob and canary.

Everything a check needs comes from the planned target: its DynamoGraphDeployment (object names, the
frontend's pod labels and tolerations, whether `up` awaits it), the served model name, in-cluster URL and GPUs
of its outputs-contract entry, and the catalog's published row and criteria (the benchmark's comparison).

The smoke Job is a deploy gate only when `up` waits for its graph (`dynamo.readiness.wait`): ordered after
the graph's Ready condition, a short wait for `/v1/models` suffices, and `up` fails when a check fails.
Without that wait, the stack chose a quick `up`: the Job is not awaited (`pulumi.com/skipAwait`) and waits for
the model as long as the graph may take to start.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.config.operability import OperabilityConfig
from serving_stack.facts.catalog import Criteria
from serving_stack.plan.alerts import RELEASE_LABEL
from serving_stack.plan.canary_alerts import CanaryAlerting
from serving_stack.plan.manifests import CONFIG_CHECKSUM_ANNOTATION, WAIT_FOR_ANNOTATION, startup_budget_seconds
from serving_stack.plan.ops_benchmark_job import BenchmarkSettings, benchmark_job, on_demand
from serving_stack.plan.ops_canary import CanarySettings, canary_deployment, canary_pod_monitor
from serving_stack.plan.ops_pods import Endpoint
from serving_stack.plan.ops_programs import program_config_map, programs_digest, read_programs
from serving_stack.plan.ops_smoke_job import SmokeSettings, smoke_test_job
from serving_stack.plan.serving import PlannedTarget

# After the graph is Ready, the frontend lists the model within seconds; ten minutes covers a worker restart.
SMOKE_WAIT_AFTER_READY_SECONDS = 600
# After activeDeadlineSeconds, the time the Job controller may take to mark the Job Failed.
JOB_DEADLINE_SLACK_MINUTES = 5
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"
DGD_DIGEST_ANNOTATION = "nemotron.nvidia.com/dgd-sha256"
SMOKE_PROGRAMS = ("smoke.py",)
CANARY_PROGRAMS = ("canary.py", "smoke.py")


@dataclass(frozen=True)
class OperabilitySettings:
    """The block's switches and settings; `smoke_wait_seconds` None: derived per target (module docstring)."""

    smoke_tests: bool
    benchmarks: bool
    canaries: bool
    smoke_wait_seconds: Optional[int]
    smoke: SmokeSettings
    benchmark: BenchmarkSettings
    canary: CanarySettings

    @property
    def canary_alerting(self) -> Optional[CanaryAlerting]:
        return CanaryAlerting(self.canary.interval_seconds) if self.canaries else None


def operability_settings(config: OperabilityConfig) -> OperabilitySettings:
    smoke, benchmark, canary = config.smokeTests, config.benchmark, config.canary
    return OperabilitySettings(
        smoke_tests=smoke.enabled,
        benchmarks=benchmark.enabled,
        canaries=canary.enabled,
        smoke_wait_seconds=smoke.waitSeconds,
        smoke=SmokeSettings(smoke.image, smoke.requestTimeoutSeconds, smoke.backoffLimit),
        benchmark=BenchmarkSettings(
            benchmark.image,
            benchmark.traceFile,
            benchmark.numRequests,
            benchmark.waitSeconds,
            benchmark.activeDeadlineSeconds,
            benchmark.ttlSecondsAfterFinished,
            benchmark.schedule,
            benchmark.concurrency,
        ),
        canary=CanarySettings(
            canary.image,
            canary.intervalSeconds,
            canary.timeoutSeconds,
            canary.scrapeIntervalSeconds,
        ),
    )


@dataclass(frozen=True)
class TargetChecks:
    """One target's objects. `gated`: `up` waits for the smoke Job, at most `smoke_timeout_minutes`."""

    target_id: str
    resource_name: str
    gated: bool
    smoke_job: Mapping[str, Any]
    benchmark: Mapping[str, Any]
    canary: Mapping[str, Any]
    canary_monitor: Mapping[str, Any]

    @property
    def smoke_timeout_minutes(self) -> int:
        deadline = int(self.smoke_job["spec"]["activeDeadlineSeconds"])
        return -(-deadline // 60) + JOB_DEADLINE_SLACK_MINUTES


@dataclass(frozen=True)
class OperabilityPlan:
    """`canary_monitors`: the canaries are scraped (monitoring is on, so the PodMonitor CRD exists)."""

    program_config_map: Mapping[str, Any]
    smoke_tests: bool
    benchmarks: bool
    canaries: bool
    canary_monitors: bool
    targets: tuple[TargetChecks, ...]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _frontend_tolerations(dgd: Mapping[str, Any]) -> list[dict[str, Any]]:
    (frontend,) = [c for c in dgd["spec"]["components"] if c["type"] == "frontend"]
    return list(frontend["podTemplate"].get("spec", {}).get("tolerations") or [])


def _smoke_wait_seconds(
    settings: OperabilitySettings, dgd: Mapping[str, Any], gated: bool, image_pull_seconds: int
) -> int:
    if settings.smoke_wait_seconds is not None:
        return settings.smoke_wait_seconds
    return SMOKE_WAIT_AFTER_READY_SECONDS if gated else startup_budget_seconds(dict(dgd)) + image_pull_seconds


def _checks(
    target: PlannedTarget,
    settings: OperabilitySettings,
    namespace: str,
    claim_name: str,
    criteria: Criteria,
    programs: Mapping[str, str],
    release_label: Optional[str],
    image_pull_seconds: int,
) -> TargetChecks:
    dgd, contract = target.dgd, target.endpoint
    endpoint = Endpoint(
        target.selected.id, dgd["metadata"]["name"], contract.servedModelName, contract.url, contract.gpus
    )
    gated = WAIT_FOR_ANNOTATION in dgd["metadata"].get("annotations", {})
    wait = _smoke_wait_seconds(settings, dgd, gated, image_pull_seconds)
    smoke = smoke_test_job(
        endpoint,
        namespace,
        settings.smoke,
        wait,
        {
            CONFIG_CHECKSUM_ANNOTATION: programs_digest({p: programs[p] for p in SMOKE_PROGRAMS}),
            DGD_DIGEST_ANNOTATION: _digest(dgd),  # a changed graph runs the smoke test again
        },
    )
    if not gated:
        smoke["metadata"]["annotations"][SKIP_AWAIT_ANNOTATION] = "true"
    performance = target.selected.recipe.entry.performance
    bench = benchmark_job(
        endpoint,
        namespace,
        settings.benchmark,
        concurrency=settings.benchmark.concurrency or performance.concurrency or 1,
        claim_name=claim_name,
        published={"performance": performance.model_dump(), "criteria": criteria.model_dump()},
        tolerations=_frontend_tolerations(dgd),
    )
    canary = canary_deployment(
        endpoint,
        namespace,
        settings.canary,
        {CONFIG_CHECKSUM_ANNOTATION: programs_digest({p: programs[p] for p in CANARY_PROGRAMS})},
    )
    monitor = canary_pod_monitor(canary, settings.canary, {RELEASE_LABEL: release_label} if release_label else None)
    return TargetChecks(
        target.selected.id,
        target.resource_name,
        gated,
        smoke,
        on_demand(bench, settings.benchmark.schedule),
        canary,
        monitor,
    )


def plan_operability(
    settings: OperabilitySettings,
    targets: Sequence[PlannedTarget],
    namespace: str,
    claim_name: str,
    criteria: Criteria,
    release_label: Optional[str],
    image_pull_seconds: int,
) -> Optional[OperabilityPlan]:
    """None when nothing is switched on or no Dynamo target is deployed. `release_label`: the label the stack's
    Prometheus selects monitors by, None without monitoring (then nothing scrapes the canaries)."""
    if not targets or not (settings.smoke_tests or settings.benchmarks or settings.canaries):
        return None
    programs = read_programs()
    return OperabilityPlan(
        program_config_map=program_config_map(namespace, programs),
        smoke_tests=settings.smoke_tests,
        benchmarks=settings.benchmarks,
        canaries=settings.canaries,
        canary_monitors=settings.canaries and release_label is not None,
        targets=tuple(
            _checks(t, settings, namespace, claim_name, criteria, programs, release_label, image_pull_seconds)
            for t in targets
        ),
    )
