"""How long each step of a first `up` takes (typical and worst case), from `durations.yaml` and the
recorded inputs: the checkpoints a pod downloads or reads, the images it pulls, how a claim binds (volumes.py),
a Job's own deadline, a worker's startupProbe budget."""

from __future__ import annotations

import re
from typing import Any

from tools.rollout.graph import HELM_RELEASE, Resource, StackGraph, lookup
from tools.rollout.rules import Rules, Span
from tools.rollout.volumes import binding
from tools.rollout.workloads import containers, images, mounted_claims, pod_specs

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ZERO = Span(0.0, 0.0, "no cloud work")


def _size_entry(table: dict[str, Any], name: str) -> dict[str, Any]:
    for prefix, entry in table["sizes_gb"].items():
        if name == prefix or name.startswith(prefix + ":") or name.startswith(prefix + "@"):
            return dict(entry)
    return dict(table["default_gb"])


def _size_gb(table: dict[str, Any], name: str) -> float:
    return float(_size_entry(table, name)["size"])


def _estimate(*entries: dict[str, Any]) -> bool:
    return any(str(entry["basis"]).startswith("estimate") for entry in entries)


def _transfer(gigabytes: float, rate: dict[str, Any], what: str, *sizes: dict[str, Any]) -> Span:
    """Minutes to move this many GB at the typical / worst MB/s of a rate entry."""
    return Span(
        gigabytes * 1000 / rate["typical"] / 60,
        gigabytes * 1000 / rate["worst"] / 60,
        f"{what} ~{gigabytes:g} GB at {rate['typical']} MB/s",
        estimated=_estimate(rate, *sizes),
    )


def _add(*spans: Span) -> Span:
    return Span(
        sum(s.typical for s in spans),
        sum(s.max for s in spans),
        "; ".join(s.basis for s in spans if s.basis),
        " + ".join(s.worst_basis for s in spans if s.max and s.worst_basis != "estimate") or "estimate",
        estimated=any(s.estimated and s.typical for s in spans),
    )


def checkpoints_named(resource: Resource, rules: Rules) -> list[str]:
    """Checkpoint repositories a workload names: known repositories, `*MODEL*` env values, `--model` args, in
    pods that mount a claim (where checkpoints are stored; a client passing a served model name mounts none)."""
    known = set(rules.durations["checkpoints"]["sizes_gb"])
    found: list[str] = []
    for spec in pod_specs(resource, rules):
        if not mounted_claims(spec):
            continue
        for container in containers(spec):
            literals = [str(e["value"]) for e in container.get("env") or [] if isinstance(e, dict) and "value" in e]
            for env in container.get("env") or []:
                if "MODEL" in str(env.get("name", "")).upper() and "value" in env:
                    found += [v for v in str(env["value"]).split(",") if "/" in v and not v.startswith("/")]
            args = [str(a) for a in container.get("args") or []]
            found += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--model"]
            found += [v for v in literals + args if v in known]
    return sorted(set(found))


def image_pull(resource: Resource, rules: Rules) -> Span:
    """Pulling the largest image of the workload (pods of one workload pull in parallel)."""
    table = rules.durations["images"]
    pulls = sorted((_size_gb(table, image), image) for image in images(resource, rules))
    if not pulls:
        return ZERO
    size, image = pulls[-1]
    name = image.split("/")[-1].split(":")[0]
    return _transfer(size, table["pull_mb_per_s"], f"pull {name}", _size_entry(table, image))


def checkpoint_transfer(resource: Resource, rules: Rules, rate_key: str, verb: str) -> Span:
    table = rules.durations["checkpoints"]
    repos = checkpoints_named(resource, rules)
    if not repos:
        return ZERO
    gigabytes = sum(_size_gb(table, repo) for repo in repos)
    sizes = [_size_entry(table, repo) for repo in repos]
    return _transfer(gigabytes, table[rate_key], f"{verb} {len(repos)} checkpoint(s)", *sizes)


def _startup_budget_minutes(spec: dict[str, Any]) -> float:
    budgets = []
    for container in containers(spec):
        probe = container.get("startupProbe") or {}
        if probe:
            budgets.append(float(probe.get("failureThreshold", 3)) * float(probe.get("periodSeconds", 10)) / 60)
    return max(budgets, default=0.0)


def _init_gate_minutes(spec: dict[str, Any]) -> float:
    """The longest an init container may hold the pod before its containers start: the prewarm gate waits
    up to its `--timeout` (serving_stack.plan.model_cache.gate_workers), then lets the worker load cold."""
    bounds = [
        float(match.group(1)) / 60
        for container in spec.get("initContainers") or []
        for match in re.finditer(r"--timeout (\d+)", " ".join(str(c) for c in container.get("command") or []))
    ]
    return sum(bounds)


def _serving_work(resource: Resource, rules: Rules) -> Span:
    """A DynamoGraphDeployment: its slowest component from pod start to serving."""
    engines = rules.durations["engines"]
    engine = engines.get(str(lookup(resource.inputs, "spec.backendFramework") or ""), engines["default"])
    pull, read = image_pull(resource, rules), checkpoint_transfer(resource, rules, "cache_read_mb_per_s", "reads")
    specs = pod_specs(resource, rules)
    budget = max((_startup_budget_minutes(spec) for spec in specs), default=0.0)
    gate = max((_init_gate_minutes(spec) for spec in specs), default=0.0)
    typical = pull.typical + read.typical + float(engine["typical"])
    worst = pull.max + gate + max(budget, read.max + 3 * float(engine["typical"]))
    return Span(
        typical,
        worst,
        f"{pull.basis}; {read.basis}; engine start ~{engine['typical']} min",
        f"image pull + the prewarm gate {gate:.0f} min + the workers' startupProbe budget {budget:.0f} min",
        estimated=pull.estimated or read.estimated or _estimate(engine),
    )


def _job_work(resource: Resource, rules: Rules) -> Span:
    """Pull, then the program: a download Job's time is its downloads; any other Job (the smoke test) runs
    its requests for `job_run`."""
    downloads = checkpoint_transfer(resource, rules, "download_mb_per_s", "downloads")
    run = downloads if downloads.typical else rules.span(rules.durations["job_run"])
    work = _add(image_pull(resource, rules), run)
    deadline = lookup(resource.inputs, "spec.activeDeadlineSeconds")
    if deadline and float(deadline) / 60 > work.max:
        worst, why = float(deadline) / 60, f"its activeDeadlineSeconds {deadline}"
    else:
        worst, why = work.max, "estimated image pull and download at the worst rates"
    return Span(work.typical, worst, work.basis, why, work.estimated)


def work(graph: StackGraph, resource: Resource, rules: Rules) -> Span:
    """The cloud work behind creating one resource, until it is really ready."""
    table = rules.durations
    if not resource.custom or resource.is_provider:
        return ZERO
    if resource.type == NODE_GROUP:
        gpu = resource.inputs.get("amiType") in table["node_groups"]["gpu_ami_types"]
        return rules.span(table["node_groups"]["gpu" if gpu else "cpu"])
    if resource.type == HELM_RELEASE:
        chart = str(resource.inputs.get("chart", ""))
        entry = next((e for name, e in table["charts"].items() if name in chart), table["types"][HELM_RELEASE])
        return rules.span(entry)
    if resource.type in table["types"]:
        return rules.span(table["types"][resource.type])
    if not resource.is_kubernetes_object:
        return rules.span(table["default"])
    write = rules.span(table["kubernetes_object"])
    if resource.kind == "PersistentVolumeClaim":
        return binding(graph, resource, rules).span
    if resource.kind == "Job":
        return _job_work(resource, rules)
    if resource.kind in rules.operators:
        return _add(write, _serving_work(resource, rules))
    if pod_specs(resource, rules):
        reads = checkpoint_transfer(resource, rules, "cache_read_mb_per_s", "reads")
        return _add(write, image_pull(resource, rules), reads)
    return write
