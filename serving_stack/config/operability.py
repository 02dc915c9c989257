"""Config block `operability`: the smoke test, benchmark and canary of each Dynamo target.

See docs/operability-programs.md for what each runs and how to read it.

Defaults, and why: the smoke test is on (a few seconds of requests, and `pulumi up` fails when a target does
not serve); the benchmark is on but suspended (a CronJob that never starts by itself costs nothing, and a
benchmark is load on a serving endpoint, so only a `schedule` makes it recurring); the canary is on (it is
what the canary alerts read; a stack without monitoring has nothing scraping it and may switch it off).
"""

from __future__ import annotations

from typing import Annotated, Optional

import pydantic

from serving_stack.config.cron import check_cron_schedule
from serving_stack.config.types import Block, Int32, PinnedImage, matching

PYTHON_IMAGE = "docker.io/library/python:3.12.8-slim"
# The AIPerf version the tests run (requirements-aiperf.txt; a test keeps the two equal).
AIPERF_IMAGE = "nvcr.io/nvidia/ai-dynamo/aiperf:0.11.0"
TRACE_FILE = "64k_400_90kv_agent_new_noschedule_short_15perc.jsonl"  # the recipe page's Mooncake trace


CronSchedule = Annotated[str, pydantic.AfterValidator(check_cron_schedule)]
TraceFileName = Annotated[
    str, matching(r"[A-Za-z0-9][A-Za-z0-9._-]*\.jsonl", "a .jsonl file name (the trace under /model-cache/traces/)")
]


class SmokeTestsConfig(Block):
    """A Job per target running ops/smoke.py once its DynamoGraphDeployment is Ready. `waitSeconds` unset: 10
    minutes when `up` waits for the graph (dynamo.readiness.wait), else the graph's own startup budget."""

    enabled: bool = True
    """Run a smoke-test Job per target after `up` deploys it; `up` fails when a target does not serve."""
    image: PinnedImage = PYTHON_IMAGE
    """The Python image the Job runs ops/smoke.py in, pinned by a semver tag or digest."""
    waitSeconds: Optional[int] = pydantic.Field(default=None, ge=0, le=4 * 3600)
    """Seconds the Job waits for the frontend to list the model; unset: 10 minutes when `up` waits for the graph, else
    the graph's startup budget."""
    requestTimeoutSeconds: int = pydantic.Field(default=120, ge=5, le=1200)
    """Seconds each smoke request may take."""
    backoffLimit: int = pydantic.Field(default=1, ge=0, le=5)
    """Retries of the Job's pod (Kubernetes Job `backoffLimit`); its `activeDeadlineSeconds` grows with it."""


class BenchmarkConfig(Block):
    """A CronJob per target running the recipe's AIPerf benchmark (ops/run_benchmark.py), suspended unless
    `schedule` is set; `numRequests` 0 replays the whole trace (hours)."""

    enabled: bool = True
    """Create the benchmark CronJob per target (suspended unless `schedule` is set; run it with `kubectl create job
    --from`)."""
    image: PinnedImage = AIPERF_IMAGE
    """The AIPerf image the CronJob runs ops/run_benchmark.py in, pinned by a semver tag or digest."""
    traceFile: TraceFileName = TRACE_FILE
    """The Mooncake trace to replay, a `.jsonl` file under /model-cache/traces/; default: the recipe page's."""
    numRequests: int = pydantic.Field(
        default=400, ge=0, le=1_000_000, description="at most a million: days of load at the deadline's bound"
    )
    concurrency: Optional[int] = pydantic.Field(
        default=None, ge=1, le=4096, description="unset: the recipe's published concurrency, else 1"
    )
    schedule: Optional[CronSchedule] = None
    """When the benchmark runs, a Kubernetes CronJob `schedule` (five fields or a macro such as `@weekly`, no
    `timeZone`: the controller manager's zone); unset: suspended, run only by hand."""
    waitSeconds: int = pydantic.Field(default=3600, ge=0, le=4 * 3600)
    """Seconds the benchmark waits for the frontend to list the model before it gives up."""
    activeDeadlineSeconds: int = pydantic.Field(default=28800, ge=600, le=7 * 86400)
    """Seconds a benchmark Job may run in all (Kubernetes Job `activeDeadlineSeconds`)."""
    ttlSecondsAfterFinished: Int32 = pydantic.Field(default=604800, ge=0, description="Kubernetes Job: int32")


class CanaryConfig(Block):
    """A Deployment per target probing it every `intervalSeconds` (ops/canary.py), and a PodMonitor that
    Prometheus scrapes it through every `scrapeIntervalSeconds` (with `monitoring.enabled`)."""

    enabled: bool = True
    """Run the canary Deployment per target (the canary alerts read its results)."""
    image: PinnedImage = PYTHON_IMAGE
    """The Python image the canary runs ops/canary.py in, pinned by a semver tag or digest."""
    intervalSeconds: int = pydantic.Field(default=60, ge=10, le=3600)
    """Seconds between two probes of the target."""
    timeoutSeconds: int = pydantic.Field(default=30, ge=1, le=600)
    """Seconds a probe may take; at most `intervalSeconds`."""
    scrapeIntervalSeconds: int = pydantic.Field(default=30, ge=5, le=600)
    """Seconds between Prometheus scrapes of the canary (PodMonitor `interval`); at most `intervalSeconds`."""

    @pydantic.model_validator(mode="after")
    def _fits_the_interval(self) -> CanaryConfig:
        if self.timeoutSeconds > self.intervalSeconds:
            raise ValueError(
                f"timeoutSeconds ({self.timeoutSeconds}) must not exceed intervalSeconds "
                f"({self.intervalSeconds}): a probe would overlap the next"
            )
        if self.scrapeIntervalSeconds > self.intervalSeconds:
            raise ValueError(
                f"scrapeIntervalSeconds ({self.scrapeIntervalSeconds}) must not exceed intervalSeconds "
                f"({self.intervalSeconds}): Prometheus would miss probe results"
            )
        return self


class OperabilityConfig(Block):
    smokeTests: SmokeTestsConfig = SmokeTestsConfig()
    """The smoke-test Job per target, run by `up`."""
    benchmark: BenchmarkConfig = BenchmarkConfig()
    """The AIPerf benchmark CronJob per target."""
    canary: CanaryConfig = CanaryConfig()
    """The canary Deployment per target and its PodMonitor."""
