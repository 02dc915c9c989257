"""The benchmark Job's program runs the real AIPerf CLI against a loopback server with a Mooncake-format
trace, and its real export feeds the comparer, in-cluster style (`--compare`) and laptop style (the CLI).

Bounded: 20 trace requests, 2 warmup requests, well under a minute. AIPerf lives in `.venv-aiperf`
(`make aiperf`, a dependency of `make test`): a missing AIPerf is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from ops_fake_openai import Behaviour, FakeOpenAIServer, Faults

from serving_stack.config.serving import TargetConfig
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.serving import effective_replicas, gpus_used

ROOT = Path(__file__).resolve().parents[1]
AIPERF = ROOT / ".venv-aiperf" / "bin" / "aiperf"
TRACE_REQUESTS, WARMUP_REQUESTS = 20, 2
FAILING_TRACE_REQUESTS = {WARMUP_REQUESTS + 5, WARMUP_REQUESTS + 13}  # the server's chat request numbers


def _target():
    """The catalog target with the smallest published concurrency (keeps the loopback run small)."""
    catalog = load_catalog()
    published = [r for r in catalog.recipes.values() if None not in r.entry.performance.model_dump().values()]
    recipe = min(published, key=lambda r: r.entry.performance.concurrency or 0)
    return catalog, recipe


def _trace(path: Path) -> list[dict]:
    """Mooncake rows: shared-prefix sessions (hash_ids blocks of 512 tokens), timestamps in ms."""
    rng = random.Random(7)
    rows = []
    for index in range(TRACE_REQUESTS):
        session_blocks = list(range((index % 4) * 100, (index % 4) * 100 + 2))
        rows.append(
            {
                "timestamp": index * 40,
                "input_length": 512 * 2 + rng.randint(16, 200),
                "output_length": rng.randint(16, 48),
                "hash_ids": [*session_blocks, 1000 + index],
            }
        )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


@pytest.fixture(scope="module")
def aiperf_environment(tmp_path_factory):
    if not AIPERF.exists():
        pytest.fail(f"{AIPERF} is missing: run `make aiperf` (make test depends on it)", pytrace=False)
    _, recipe = _target()
    hf_home = tmp_path_factory.mktemp("model-cache")
    subprocess.run(
        [
            str(AIPERF.parent / "python"),
            str(ROOT / "tests" / "ops_tokenizer.py"),
            str(hf_home),
            recipe.served_model_name,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def benchmark_run(aiperf_environment, tmp_path_factory):
    catalog, recipe = _target()
    work = tmp_path_factory.mktemp("perf")
    rows = _trace(work / "trace.jsonl")
    gpus = gpus_used(recipe, effective_replicas(recipe, TargetConfig(id=recipe.id)))
    spec = {
        "target": recipe.id,
        "gpus": gpus,
        "performance": recipe.entry.performance.model_dump(),
        "criteria": catalog.criteria.model_dump(),
    }
    faults = Faults(failing_requests=FAILING_TRACE_REQUESTS)
    with FakeOpenAIServer(Behaviour(model=recipe.served_model_name, faults=faults)) as server:
        run = subprocess.run(
            [
                sys.executable,
                str(ROOT / "ops" / "run_benchmark.py"),
                "--url",
                server.root_url,
                "--model",
                recipe.served_model_name,
                "--trace",
                str(work / "trace.jsonl"),
                "--concurrency",
                str(recipe.entry.performance.concurrency),
                "--num-requests",
                "0",
                "--results-root",
                str(work / "results"),
                "--run-name",
                "bench-test",
                "--warmup-requests",
                str(WARMUP_REQUESTS),
                "--wait",
                "10",
                "--request-timeout",
                "30",
                "--aiperf",
                str(AIPERF),
                "--compare",
                json.dumps(spec),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=aiperf_environment,
        )
    (export,) = (work / "results").glob("*_bench-test/trace/profile_export_aiperf.json")
    return {
        "run": run,
        "export": export,
        "rows": rows,
        "spec": spec,
        "recipe": recipe,
        "catalog": catalog,
        "chat_requests": server.chat_requests,
    }


@pytest.mark.slow  # the pinned AIPerf CLI against a loopback server
def test_aiperf_replays_the_whole_trace_at_the_catalog_concurrency(benchmark_run):
    run = benchmark_run["run"]
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    export = json.loads(benchmark_run["export"].read_text())
    assert benchmark_run["chat_requests"] == WARMUP_REQUESTS + TRACE_REQUESTS
    assert export["input_config"]["phases"] == [
        {
            "name": "profiling",
            "type": "concurrency",
            "requests": TRACE_REQUESTS,
            "concurrency": benchmark_run["recipe"].entry.performance.concurrency,
        }
    ]
    assert export["error_request_count"]["avg"] == len(FAILING_TRACE_REQUESTS)
    # Server-side counts with ignore_eos: every successful request produced exactly its trace output_length.
    lengths = [row["output_length"] for row in benchmark_run["rows"]]
    osl = export["output_sequence_length"]
    assert min(lengths) <= osl["min"] <= osl["max"] <= max(lengths)
    assert osl["count"] == TRACE_REQUESTS - len(FAILING_TRACE_REQUESTS)


@pytest.mark.slow  # the pinned AIPerf CLI against a loopback server
def test_the_in_cluster_comparison_reads_the_real_export(benchmark_run):
    export = json.loads(benchmark_run["export"].read_text())
    comparison = json.loads((benchmark_run["export"].parent / "comparison.json").read_text())
    performance, criteria = benchmark_run["recipe"].entry.performance, benchmark_run["catalog"].criteria
    rows = {row["metric"]: row for row in comparison["rows"]}
    ttft, per_user, per_gpu = rows["TTFT p50 (ms)"], rows["output tok/s/user"], rows["output tok/s/GPU"]
    assert ttft["measured"] == export["time_to_first_token"]["p50"] and ttft["published"] == performance.ttftP50Ms
    assert ttft["ratio"] == pytest.approx(ttft["measured"] / performance.ttftP50Ms)
    assert ttft["criterion"] == f"< {criteria.maxTtftP50Ms:g}"
    assert per_user["measured"] == export["output_token_throughput_per_user"]["avg"]
    assert per_user["criterionCheck"] == (
        "pass" if per_user["measured"] >= criteria.minTokensPerSecondPerUser else "fail"
    )
    gpus = benchmark_run["spec"]["gpus"]
    assert per_gpu["measured"] == pytest.approx(export["output_token_throughput"]["avg"] / gpus)
    assert per_gpu["published"] == performance.outputTokensPerSecondPerGpu
    assert rows["concurrency"]["vsPublished"] == "pass"
    assert rows["error requests"]["measured"] == len(FAILING_TRACE_REQUESTS)
    assert "| metric | measured | published |" in benchmark_run["run"].stdout
    assert f"Result: **{comparison['result']}**" in benchmark_run["run"].stdout


@pytest.mark.slow  # the pinned AIPerf CLI against a loopback server
def test_the_laptop_cli_agrees_with_the_in_cluster_comparison(benchmark_run, tmp_path):
    recipe = benchmark_run["recipe"]
    cli = subprocess.run(
        [
            sys.executable,
            str(ROOT / "ops" / "benchmark_compare.py"),
            "--target",
            recipe.id,
            "--export",
            str(benchmark_run["export"]),
            "--gpus",
            str(benchmark_run["spec"]["gpus"]),
            "--json",
            str(tmp_path / "comparison.json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    in_cluster = json.loads((benchmark_run["export"].parent / "comparison.json").read_text())
    assert json.loads((tmp_path / "comparison.json").read_text()) == in_cluster
    assert cli.returncode == {"pass": 0, "fail": 1, "n/a": 3}[in_cluster["result"]], cli.stdout + cli.stderr
    assert cli.stdout.strip().endswith(f"Result: **{in_cluster['result']}**")


def _driver(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "ops" / "run_benchmark.py"), *arguments], capture_output=True, text=True, timeout=60
    )


def test_the_program_stops_before_aiperf_when_the_trace_or_the_model_is_missing(tmp_path):
    _, recipe = _target()
    common = [
        "--model",
        recipe.served_model_name,
        "--concurrency",
        "4",
        "--results-root",
        str(tmp_path / "results"),
        "--run-name",
        "x",
        "--wait",
        "0",
        "--aiperf",
        "/nonexistent/aiperf",
    ]
    with FakeOpenAIServer(Behaviour(model=recipe.served_model_name, faults=Faults(models_missing=True))) as server:
        no_trace = _driver("--url", server.root_url, "--trace", str(tmp_path / "missing.jsonl"), *common)
        _trace(tmp_path / "trace.jsonl")
        not_served = _driver("--url", server.root_url, "--trace", str(tmp_path / "trace.jsonl"), *common)
    assert no_trace.returncode == 1 and "trace" in no_trace.stdout and "not found" in no_trace.stdout
    assert not_served.returncode == 1 and f"gave up waiting for {recipe.served_model_name}" in not_served.stdout
    assert not (tmp_path / "results").exists() and server.chat_requests == 0
