"""Run the backends' own response parsers over model outputs, outside any server.

Two probes with one JSON contract (the module docstring of `vllm_probe.py`): the Dynamo frontend's parsers (a
small Rust program on the pinned `dynamo-parsers` crate, `tools/parser_probe/dynamo`) and vLLM's (the pinned
wheel in `.venv-parsers`). `make parser-probes` builds both; `tests/test_failover_parsers.py` runs them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
PARSERS_VENV = ROOT / ".venv-parsers"
DYNAMO_PROBE = ROOT / "build" / "parser-probe" / "release" / "dynamo-parser-probe"
VLLM_PROBE = Path(__file__).resolve().parent / "vllm_probe.py"
TIMEOUT_SECONDS = 300


def _command(runtime: str) -> list[str]:
    if runtime == "dynamo-frontend":
        if not DYNAMO_PROBE.is_file():
            raise RuntimeError(f"{DYNAMO_PROBE} is missing: run `make parser-probes` before the parser tests")
        return [str(DYNAMO_PROBE)]
    if runtime == "vllm-openai-server":
        python = PARSERS_VENV / "bin" / "python"
        if not python.is_file():
            raise RuntimeError(f"{python} is missing: run `make parser-probes` before the parser tests")
        return [str(python), str(VLLM_PROBE)]
    raise ValueError(f"no probe runs the {runtime!r} runtime")


def parse(runtime: str, tool_parser: str, reasoning_parser: str, cases: dict[str, Any]) -> dict[str, Any]:
    """Each case's answers ({"stream": ..., "batch": ...}) from `runtime`'s parsers of these names."""
    job = {"tool_parser": tool_parser, "reasoning_parser": reasoning_parser, "cases": cases}
    done = subprocess.run(
        _command(runtime),
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{runtime} probe exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    answers: dict[str, Any] = json.loads(done.stdout)
    return answers
