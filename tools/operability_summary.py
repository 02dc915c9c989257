"""The `summary.md` section on the checks of each Dynamo endpoint: smoke test, benchmark, canary (read from the
recorded resources, so it shows what the program really registered)."""

from __future__ import annotations

from typing import Any, Optional

from tools.mock_runtime import ProgramRun, RecordedResource

OPS_LABEL = ("app.kubernetes.io/part-of", "nemotron-ops")
TARGET_ID = "nemotron.nvidia.com/target-id"
SKIP_AWAIT = "pulumi.com/skipAwait"
WHY_A_DEPLOYMENT = (
    "The canary is a long-running Deployment scraped through a PodMonitor, not a CronJob: a CronJob's pod exits "
    "seconds after its request, before Prometheus scrapes it, and pushing to a Pushgateway instead keeps a dead "
    "canary's last value looking fresh forever. `NemotronCanaryStale` fires when its results stop."
)


def _ops(run: ProgramRun) -> dict[tuple[str, str], RecordedResource]:
    found = {}
    for resource in run.resources:
        metadata = resource.inputs.get("metadata") or {}
        if (
            resource.custom
            and (metadata.get("labels") or {}).get(OPS_LABEL[0]) == OPS_LABEL[1]
            and TARGET_ID in (metadata.get("annotations") or {})
        ):
            found[(resource.inputs["kind"], metadata["annotations"][TARGET_ID])] = resource
    return found


def _args(pod_spec: dict[str, Any]) -> dict[str, str]:
    args = pod_spec["containers"][0]["args"]
    return dict(zip(args[::2], args[1::2], strict=True))


def _smoke(job: Optional[RecordedResource]) -> str:
    if job is None:
        return "off"
    name = job.inputs["metadata"]["name"]
    if (job.inputs["metadata"].get("annotations") or {}).get(SKIP_AWAIT) == "true":
        return f"`{name}`, not awaited (`dynamo.readiness.wait` is off)"
    return f"`{name}`, gates `up` (at most {job.custom_timeouts.get('create', '10m')})"


def _benchmark(cron_job: Optional[RecordedResource]) -> str:
    if cron_job is None:
        return "off"
    name, spec = cron_job.inputs["metadata"]["name"], cron_job.inputs["spec"]
    return f"`{name}`, {'suspended (run on demand)' if spec['suspend'] else 'schedule `' + spec['schedule'] + '`'}"


def _canary(deployment: Optional[RecordedResource], monitor: Optional[RecordedResource]) -> str:
    if deployment is None:
        return "off"
    interval = _args(deployment.inputs["spec"]["template"]["spec"])["--interval"]
    scraped = "scraped by its PodMonitor" if monitor is not None else "**not scraped** (monitoring off)"
    return f"`{deployment.inputs['metadata']['name']}`, every {interval} s, {scraped}"


def operability_markdown(run: ProgramRun, dynamo_endpoints: list[str]) -> list[str]:
    objects = _ops(run)
    if not objects:
        return []
    (namespace,) = {r.inputs["metadata"]["namespace"] for r in objects.values()}
    lines = [
        "## Smoke test, benchmark, canary",
        "",
        "| endpoint | smoke test (Job) | benchmark (CronJob) | canary (Deployment) |",
        "| --- | --- | --- | --- |",
    ]
    for endpoint in dynamo_endpoints:
        lines.append(
            f"| `{endpoint}` | {_smoke(objects.get(('Job', endpoint)))} | "
            f"{_benchmark(objects.get(('CronJob', endpoint)))} | "
            f"{_canary(objects.get(('Deployment', endpoint)), objects.get(('PodMonitor', endpoint)))} |"
        )
    benchmarks = [r.inputs["metadata"]["name"] for (kind, _), r in sorted(objects.items()) if kind == "CronJob"]
    if benchmarks:
        lines += [
            "",
            "Run a benchmark (each run is a new Job; the log ends with the comparison against the published row):",
            "",
            "```bash",
            f"kubectl create job -n {namespace} --from=cronjob/{benchmarks[0]} {benchmarks[0]}-$(date +%s)",
            "```",
        ]
    return [*lines, "", WHY_A_DEPLOYMENT, "", "How to run and read them: docs/operability-programs.md.", ""]
