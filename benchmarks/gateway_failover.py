"""Gateway failover figures with the real LiteLLM proxy on loopback (not a test; `make bench-gateway`).

The gateway config the prod stack generates, its backends rewritten to local processes (one per Dynamo
frontend and per SageMaker endpoint, ~300 ms each), the same bounded scenarios as
tests/test_gateway_failover.py, each on a fresh gateway, printed as one table:

    .venv/bin/python benchmarks/gateway_failover.py [--requests 200] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path[:0] = [
    str(PROJECT_DIR),
    str(PROJECT_DIR / "tests"),
]  # the loopback harness is the tests' (tests/gateway_loopback)

from gateway_loopback import scenarios
from gateway_loopback.load import Figures
from gateway_loopback.stack_backends import (
    BACKEND_LATENCY_SECONDS,
    LOOPBACK_TIMINGS,
    StackBackends,
    stack_backends,
)

from tools.mock_runtime import run_program
from tools.secret_placeholders import stack_inputs

Scenario = Callable[[scenarios.LoopbackGateway, StackBackends, int, int], list[Figures]]


def dead_frontend(gw: scenarios.LoopbackGateway, stack: StackBackends, total: int, concurrency: int) -> list[Figures]:
    results = [
        scenarios.baseline(gw, stack.model, 4 * concurrency, concurrency),
        scenarios.kill_one_backend(gw, stack.model, total, concurrency),
        scenarios.restore_after_kill(gw, stack.model, concurrency, deadline_seconds=30),
        scenarios.kill_one_backend_streaming(gw, stack.model, total, concurrency),
    ]
    return [r.figures for r in results]


def hung_frontend(gw: scenarios.LoopbackGateway, stack: StackBackends, total: int, concurrency: int) -> list[Figures]:
    return [scenarios.hang_one_backend(gw, stack.model, total, concurrency).figures]


def dead_tier(gw: scenarios.LoopbackGateway, stack: StackBackends, total: int, concurrency: int) -> list[Figures]:
    return [
        scenarios.kill_all_dynamo(gw, stack.model, total, concurrency).figures,
        scenarios.degraded_only(gw, stack.model, 5 * concurrency, concurrency).figures,
    ]


def table(rows: list[Figures]) -> str:
    lines = [
        "| scenario | requests | failed | p50 ms | p99 ms | max ms | fallback share | answered by (model group: n) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        groups = ", ".join(f"`{group}`: {count}" for group, count in sorted(row.answered_by_group.items()))
        lines.append(
            f"| {row.scenario} | {row.requests} | {row.failed} | {row.p50_ms:.0f} | {row.p99_ms:.0f} | "
            f"{row.max_ms:.0f} | {row.fallback_share:.0%} | {groups} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    inputs = stack_inputs("prod", placeholders=True)  # as `make render STACK=prod` runs it
    run = run_program(inputs.config, inputs.secret_keys, stack="prod")
    stack = stack_backends(run.outputs, inputs.stack_config().gateway)
    settings = stack.settings(replicas=1, **LOOPBACK_TIMINGS)
    rows: list[Figures] = []
    started = time.monotonic()
    for scenario in (dead_frontend, hung_frontend, dead_tier):
        with (
            tempfile.TemporaryDirectory(prefix="gateway-bench-") as workdir,
            scenarios.loopback_gateway(
                stack.dynamo, stack.sagemaker, settings, Path(workdir), BACKEND_LATENCY_SECONDS
            ) as gw,
        ):
            rows += scenario(gw, stack, args.requests, args.concurrency)
    degraded = stack.degraded_endpoint
    origin = "the stack's" if degraded in stack.stack_sagemaker else "a loopback stand-in: the stack names none"
    print(
        f"prod plan: {len(stack.dynamo)} Dynamo targets of {stack.model}, same-model fallback "
        f"{stack.same_model_endpoint.id}, degraded fallback {degraded.id} ({degraded.servedModelName}; "
        f"{origin}); backends {BACKEND_LATENCY_SECONDS * 1000:.0f} ms; "
        f"{args.requests} requests at {args.concurrency} concurrent; router timings {LOOPBACK_TIMINGS}\n"
    )
    print(table(rows))
    print(f"\n{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
