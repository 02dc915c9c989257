#!/usr/bin/env python3
"""Run the recipe's AIPerf benchmark against one target, as upstream `recipes/*/perf/perf.yaml` does.

The benchmark Job's entry point, and the same command from a laptop (a port-forward and a local
trace). Steps: the trace must exist; wait until /v1/models lists the model (the frontend answers
/health before any worker is up); a short synthetic warmup; then the Mooncake trace at the
catalog's concurrency, with the recipe page's AIPerf flags (`--use-server-token-count
--extra-inputs ignore_eos:true --request-timeout-seconds 1200`) plus `--no-fixed-schedule`, since the
published rows are concurrency runs and AIPerf replays a timestamped trace on its own schedule
otherwise. Results go to `<results-root>/<epoch>_<run-name>/{warmup,trace}/`.

With `--compare` (the catalog row, criteria and GPUs as JSON; the Job gets it from the plan) the
comparison table is printed and written beside the export. The exit code says whether the run
completed, not whether it met the published figures: that verdict is in the table and its JSON.
Shipped with smoke.py and benchmark_compare.py in one ConfigMap directory, which is why it imports them
as top-level modules; stdlib only, since the AIPerf image brings nothing else we may rely on.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

import benchmark_compare
import smoke

WARMUP_INPUT_TOKENS = 8000
WARMUP_OUTPUT_TOKENS = 1000
EXPORT_FILE = "profile_export_aiperf.json"
COMPARISON_FILE = "comparison.json"


def _profile_argv(args: argparse.Namespace, artifact_dir: Path, workload: list[str]) -> list[str]:
    """`aiperf profile` against the target's streaming chat endpoint with `workload`'s own flags."""
    return [
        args.aiperf,
        "profile",
        "-m",
        args.model,
        "--tokenizer",
        args.tokenizer or args.model,
        "--url",
        args.url,
        "--endpoint-type",
        "chat",
        "--streaming",
        *workload,
        "--request-timeout-seconds",
        f"{args.request_timeout:g}",
        "--ui",
        "none",
        "--artifact-dir",
        str(artifact_dir),
    ]


def trace_argv(args: argparse.Namespace, requests: int, artifact_dir: Path) -> list[str]:
    trace = ["--custom-dataset-type", "mooncake_trace", "--input-file", str(args.trace)]
    trace += ["--num-requests", str(requests), "--use-server-token-count", "--extra-inputs", "ignore_eos:true"]
    trace += ["--concurrency", str(args.concurrency), "--no-fixed-schedule", "--random-seed", "42"]
    return _profile_argv(args, artifact_dir, trace)


def warmup_argv(args: argparse.Namespace, artifact_dir: Path) -> list[str]:
    warmup = ["--isl", str(WARMUP_INPUT_TOKENS), "--osl", str(WARMUP_OUTPUT_TOKENS), "--concurrency", "1"]
    return _profile_argv(args, artifact_dir, [*warmup, "--request-count", str(args.warmup_requests)])


def run(argv: list[str]) -> int:
    print("+ " + " ".join(argv), flush=True)
    return subprocess.run(argv).returncode


def compare_and_report(spec: dict[str, Any], export_path: Path) -> None:
    published, criteria = benchmark_compare.published_from_catalog(
        {"targets": [{"id": spec["target"], "performance": spec.get("performance")}], "criteria": spec.get("criteria")},
        spec["target"],
    )
    measured = benchmark_compare.measured_from_export(json.loads(export_path.read_text()), int(spec["gpus"]))
    comparison = benchmark_compare.compare(
        spec["target"], measured, published, criteria, float(spec.get("minRatio", 0.8))
    )
    print(benchmark_compare.markdown(comparison), flush=True)
    (export_path.parent / COMPARISON_FILE).write_text(
        json.dumps(benchmark_compare.as_json(comparison), indent=2) + "\n"
    )


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="frontend root URL, e.g. http://<dgd>-frontend:8000")
    parser.add_argument("--model", required=True, help="served model name")
    parser.add_argument("--trace", required=True, type=Path, help="Mooncake-format JSONL trace")
    parser.add_argument("--concurrency", required=True, type=int)
    parser.add_argument(
        "--num-requests", type=int, default=400, help="first N trace rows (default 400; 0 = the whole trace: hours)"
    )
    parser.add_argument("--results-root", required=True, type=Path)
    parser.add_argument("--run-name", required=True)
    parser.add_argument("--warmup-requests", type=int, default=5, help="synthetic warmup requests (default 5; 0 skips)")
    parser.add_argument(
        "--wait", type=float, default=3600.0, help="seconds to wait for the model to be listed (default 3600)"
    )
    parser.add_argument(
        "--request-timeout", type=float, default=1200.0, help="AIPerf per-request timeout (default 1200)"
    )
    parser.add_argument("--tokenizer", help="tokenizer name for AIPerf (default: --model, read from the HF cache)")
    parser.add_argument("--aiperf", default="aiperf", help="the aiperf executable")
    parser.add_argument(
        "--compare", type=json.loads, help='JSON {"target", "gpus", "performance", "criteria", "minRatio"}'
    )
    args = parser.parse_args(argv)
    if args.concurrency < 1 or args.num_requests < 0 or args.warmup_requests < 0 or args.wait < 0:
        parser.error("--concurrency must be >= 1; --num-requests, --warmup-requests and --wait >= 0")
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if not args.trace.is_file():
        print(f"error: trace {args.trace} not found; copy it onto the model cache first (docs/operability-programs.md)")
        return 1
    trace_rows = sum(1 for line in args.trace.open() if line.strip())
    requests = args.num_requests or trace_rows
    client = smoke.Client(args.url.rstrip("/") + "/v1", timeout=30.0)
    print(f"waiting up to {args.wait:g}s for {args.model} at {args.url}/v1/models", flush=True)
    if not smoke.wait_until_served(client, args.model, args.wait):
        return 1
    run_dir = args.results_root / f"{int(time.time())}_{args.run_name}"
    run_dir.mkdir(parents=True)
    if args.warmup_requests and run(warmup_argv(args, run_dir / "warmup")) != 0:
        print("error: warmup failed")
        return 1
    print(f"trace {args.trace} ({trace_rows} rows): {requests} requests at concurrency {args.concurrency}", flush=True)
    if run(trace_argv(args, requests, run_dir / "trace")) != 0:
        print("error: aiperf failed; see its log under " + str(run_dir / "trace" / "logs"))
        return 1
    export_path = run_dir / "trace" / EXPORT_FILE
    print(f"export: {export_path}", flush=True)
    if args.compare:
        compare_and_report(args.compare, export_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
