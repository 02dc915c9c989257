"""The first `up` pulls the workers' image while the weights download: gated graphs wait for the operator, not
for the download Jobs; the Job marks each checkpoint once it is complete, and the workers' gate waits for the
marks (run here as rendered, against a temporary model cache); the timing model lays the pull beside the
download. Ungated graphs still wait for the Jobs."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rollout_helpers import committed_config, key, of_kind, records, rendered, report

from serving_stack.names import MODEL_CACHE_CLAIM, PREPULL_APP, WORKER_COMPONENT_TYPES
from serving_stack.plan.model_cache import (
    DOWNLOAD_MARKER,
    MARK_DOWNLOADED_HEADER,
    PROGRAM_FILE,
    PROGRAM_MOUNT,
    STATE_DIR,
)
from tools.rollout.durations import checkpoints_named

_spec = importlib.util.spec_from_file_location("prewarm_program", PROGRAM_FILE)
prewarm = importlib.util.module_from_spec(_spec)
sys.modules["prewarm_program"] = prewarm
_spec.loader.exec_module(prewarm)

Record = dict[str, Any]


def _download_jobs(stack: list[Record]) -> list[Record]:
    return [
        job
        for job in of_kind(stack, "Job")
        if any(
            MARK_DOWNLOADED_HEADER in str(a)
            for c in job["inputs"]["spec"]["template"]["spec"]["containers"]
            for a in c.get("args", [])
        )
    ]


def _ungated(stack: str) -> list[Record]:
    config = committed_config(stack)
    config["modelCache"].setdefault("prewarm", {})["gateWorkers"] = False
    return rendered(config, stack)


def test_the_marker_name_is_the_prewarm_programs():
    assert prewarm.DOWNLOAD_MARKER == DOWNLOAD_MARKER


def test_gated_graphs_wait_for_the_operator_and_the_prewarm_daemon_sets_for_the_download():
    stack = records("prod")
    jobs = {key(j) for j in _download_jobs(stack)}
    graphs = of_kind(stack, "DynamoGraphDeployment")
    assert jobs and graphs
    for graph in graphs:
        assert not jobs & set(graph["dependsOn"]), graph["name"]
        assert any(d.startswith("kubernetes:helm.sh/v3:Release::") for d in graph["dependsOn"])
    daemon_sets = of_kind(stack, "DaemonSet")
    prewarm_sets = [d for d in daemon_sets if jobs <= set(d["dependsOn"])]
    assert prewarm_sets
    program = next(c for c in of_kind(stack, "ConfigMap") if c["inputs"]["metadata"]["name"] == "model-prewarm-program")
    parent = next(r for r in stack if key(r) == program["parent"])
    assert not jobs & set(program["dependsOn"]) and not jobs & set(parent["dependsOn"])


def test_ungated_graphs_still_wait_for_the_download_jobs():
    stack = _ungated("prod")
    jobs = {key(j) for j in _download_jobs(stack)}
    for graph in of_kind(stack, "DynamoGraphDeployment"):
        assert jobs <= set(graph["dependsOn"]), graph["name"]
        for component in graph["inputs"]["spec"]["components"]:
            assert "initContainers" not in component["podTemplate"]["spec"]


def _snapshot(cache: Path, repo: str, revision: str, shards: list[str], missing: str = "") -> None:
    """A huggingface_hub cache entry: blobs, the snapshot's symlinks, an index naming the shards, refs/main."""
    repo_dir = cache / "hub" / ("models--" + repo.replace("/", "--"))
    files = {
        **dict.fromkeys(shards, b"w" * 64),
        "model.safetensors.index.json": json.dumps({"weight_map": dict(enumerate(shards))}).encode(),
    }
    for name, content in files.items():
        if name == missing:
            continue
        blob = repo_dir / "blobs" / f"{revision}-{name}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(content)
        link = repo_dir / "snapshots" / revision / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(revision)


def _job_check(job: Record, cache: Path) -> subprocess.CompletedProcess[str]:
    """The check the rendered Job runs after upstream's download loop, run alone against `cache`."""
    (container,) = job["inputs"]["spec"]["template"]["spec"]["containers"]
    script = str(container["args"][-1])
    env = {e["name"]: str(e["value"]) for e in container["env"] if "value" in e}
    env = {**os.environ, **env, "HF_HOME": str(cache)}
    return subprocess.run(
        [sys.executable, "-c", script[script.index(MARK_DOWNLOADED_HEADER) :]],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _gate(worker: dict[str, Any], cache: Path, state_dir: Path) -> tuple[str, list[str]]:
    """The rendered gate's shell command with the pod's paths replaced by local ones, bounded at 1 s."""
    (init,) = worker["initContainers"]
    command = init["command"][-1]
    (cache_mount,) = [m["mountPath"] for m in init["volumeMounts"] if m["name"] == MODEL_CACHE_CLAIM]
    models = re.search(r"--models ([^;\s]+)", command)
    assert models, command
    command = re.sub(r"--timeout \d+", "--timeout 1", command)
    command = command.replace(f"{PROGRAM_MOUNT}/", f"{PROGRAM_FILE.parent}/").replace(STATE_DIR, str(state_dir))
    command = command.replace(f"--cache-root {cache_mount}", f"--cache-root {cache}")
    return command, models.group(1).split(",")


def _run_gate(command: str) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["sh", "-c", command], env={**os.environ, "PATH": path}, capture_output=True, text=True, timeout=60
    )


def _first_worker(stack: list[Record]) -> dict[str, Any]:
    graph = of_kind(stack, "DynamoGraphDeployment")[0]
    return next(
        c["podTemplate"]["spec"] for c in graph["inputs"]["spec"]["components"] if c["type"] in WORKER_COMPONENT_TYPES
    )


def test_the_gate_waits_for_the_jobs_marker_then_for_the_warm_node(tmp_path: Path):
    stack = records("dev")
    (job,) = _download_jobs(stack)
    cache, state_dir = tmp_path / "model-cache", tmp_path / "state"
    command, models = _gate(_first_worker(stack), cache, state_dir)
    downloaded = checkpoints_named(report(stack).graph.resources[key(job)], report(stack).rules)
    assert set(models) <= set(downloaded)
    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    for repo in downloaded:  # a download cut short: a shard its index names is not there
        _snapshot(cache, repo, "rev1", shards, missing=shards[1])

    gate = _run_gate(command)
    assert gate.returncode == prewarm.NOT_DOWNLOADED, gate.stderr  # no marker: the worker must not start
    check = _job_check(job, cache)
    assert check.returncode != 0 and shards[1] in check.stderr
    assert not list(cache.rglob(DOWNLOAD_MARKER))

    for repo in downloaded:
        _snapshot(cache, repo, "rev1", shards)
    check = _job_check(job, cache)
    assert check.returncode == 0, check.stderr
    assert len(list(cache.rglob(DOWNLOAD_MARKER))) == len(downloaded)
    gate = _run_gate(command)
    assert gate.returncode == 0 and "loading cold" in gate.stdout  # downloaded, node not warm yet: load cold

    state_dir.mkdir()
    (state_dir / "ready").write_text(json.dumps({"boot_id": prewarm.boot_id()}))
    gate = _run_gate(command)
    assert gate.returncode == 0 and "loading cold" not in gate.stdout

    for repo in models:  # a new revision on the hub: the marker is stale until the Job marks it
        _snapshot(cache, repo, "rev2", shards)
    assert _run_gate(command).returncode == prewarm.NOT_DOWNLOADED


def _without_prepull(stack: list[Record]) -> list[Record]:
    return [
        d
        for d in stack
        if not (d["inputs"].get("kind") == "DaemonSet" and PREPULL_APP in d["inputs"]["metadata"]["name"])
    ]


@pytest.mark.parametrize("prepull", [True, False])
@pytest.mark.parametrize("gated", [True, False])
def test_the_timing_model_pulls_the_image_during_the_download_only_when_gated_or_pre_pulled(gated: bool, prepull: bool):
    stack = records("prod") if gated else _ungated("prod")
    stack = stack if prepull else _without_prepull(stack)
    rollout = report(stack)
    steps = rollout.timeline.steps
    (job,) = _download_jobs(stack)
    download = steps[key(job)]
    for graph in of_kind(stack, "DynamoGraphDeployment"):
        step = steps[key(graph)]
        needs = {p.key for p in step.prerequisites}  # its own pool's prewarm
        prewarmed = max(
            (
                steps[key(d)].ready
                for d in of_kind(stack, "DaemonSet")
                if key(job) in d["dependsOn"] and key(d) in needs
            ),
            default=0.0,
        )
        pull = next(p for p in step.parts if "pull" in p.part.name.rsplit(": ", 1)[-1])
        load = next(p for p in step.parts if p.part.name.startswith("model load"))
        if gated or prepull:
            assert pull.start < download.ready * 60  # kubelet pulls while the Job downloads
        else:
            assert pull.start >= download.ready * 60
        if gated:
            assert load.start == pytest.approx(max(pull.end, prewarmed * 60, download.ready * 60))
        else:
            assert step.start >= download.ready and load.start >= max(pull.end, download.ready * 60)
