"""The smoke program passes against a good endpoint and names the exact check each broken behaviour fails.

It runs as a real process (as in the Job and from a laptop) against a loopback OpenAI-compatible server.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ops_fake_openai import Behaviour, FakeOpenAIServer, Faults

from serving_stack.facts.catalog import load_catalog

PROGRAM = Path(__file__).resolve().parents[1] / "ops" / "smoke.py"
CHECKS = ["models", "chat-reasoning-on", "chat-reasoning-off", "chat-stream", "tool-call"]
LINE = re.compile(r"^(PASS|FAIL) (\S+) +(\d+) ms  (.*)$")
SERVED_MODELS = sorted({recipe.served_model_name for recipe in load_catalog().recipes.values()})


def smoke(base_url: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"} | (env or {})
    return subprocess.run(
        [sys.executable, str(PROGRAM), "--base-url", base_url, *extra],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )


def results(run: subprocess.CompletedProcess[str]) -> dict[str, tuple[str, str]]:
    """check name -> (PASS|FAIL, reason), asserting the one-bounded-line-per-check format."""
    *check_lines, summary = run.stdout.splitlines()
    parsed = {}
    for line in check_lines:
        match = LINE.match(line)
        assert match and len(line) < 220, line
        parsed[match[2]] = (match[1], match[4])
    assert list(parsed) == CHECKS
    assert (
        summary
        == f"{'PASS' if run.returncode == 0 else 'FAIL'} {sum(s == 'PASS' for s, _ in parsed.values())}/5 checks passed"
    )
    return parsed


@pytest.mark.parametrize("model", SERVED_MODELS)
def test_a_good_endpoint_passes_every_check(model):
    with FakeOpenAIServer(Behaviour(model=model)) as server:
        run = smoke(server.base_url, "--model", model)
    assert run.returncode == 0, run.stdout + run.stderr
    assert {status for status, _ in results(run).values()} == {"PASS"}
    assert server.chat_requests == 4


@pytest.mark.parametrize(
    ("fault", "failing_check", "reason"),
    [
        ("models_missing", "models", "not in /v1/models"),
        ("reasoning_ignored", "chat-reasoning-on", "no reasoning_content"),
        ("reasoning_leak", "chat-reasoning-off", "reasoning chars came back"),
        ("stream_without_done", "chat-stream", "without [DONE]"),
        ("stream_without_content", "chat-stream", "no content delta"),
        ("stream_without_usage", "chat-stream", "no usage chunk"),
        ("tool_calls_missing", "tool-call", "no tool_calls"),
        ("tool_arguments_malformed", "tool-call", "arguments are not JSON"),
    ],
)
def test_each_broken_behaviour_fails_exactly_its_check(fault, failing_check, reason):
    model = SERVED_MODELS[0]
    with FakeOpenAIServer(Behaviour(model=model, faults=Faults(**{fault: True}))) as server:
        run = smoke(server.base_url, "--model", model)
    assert run.returncode == 1
    checks = results(run)
    assert {name for name, (status, _) in checks.items() if status == "FAIL"} == {failing_check}
    assert reason in checks[failing_check][1]


def test_a_wrong_answer_fails_both_reasoning_checks():
    model = SERVED_MODELS[0]
    with FakeOpenAIServer(Behaviour(model=model, faults=Faults(wrong_answer=True))) as server:
        checks = results(smoke(server.base_url, "--model", model))
    assert {n for n, (s, _) in checks.items() if s == "FAIL"} == {"chat-reasoning-on", "chat-reasoning-off"}
    assert "lacks the answer 42" in checks["chat-reasoning-off"][1]


def test_server_errors_are_reported_with_their_status():
    model = SERVED_MODELS[0]
    with FakeOpenAIServer(Behaviour(model=model, faults=Faults(chat_status=503))) as server:
        checks = results(smoke(server.base_url, "--model", model))
    assert checks["models"][0] == "PASS"
    assert all(checks[name][0] == "FAIL" and "HTTP 503" in checks[name][1] for name in CHECKS[1:])


def test_a_hanging_endpoint_is_bounded_by_the_timeout():
    model = SERVED_MODELS[0]
    with FakeOpenAIServer(Behaviour(model=model, faults=Faults(chat_delay_seconds=3))) as server:
        started = time.monotonic()
        checks = results(smoke(server.base_url, "--model", model, "--timeout", "0.5"))
        elapsed = time.monotonic() - started
    assert all(
        checks[name] in (("FAIL", "timed out"), ("FAIL", "no complete answer within 0.5s")) for name in CHECKS[1:]
    )
    assert elapsed < 4 * 0.5 + 2


def test_a_dripping_endpoint_is_cut_at_the_timeout():
    # Every byte arrives well within the socket timeout, so only the per-check bound can stop it.
    model = SERVED_MODELS[0]
    with FakeOpenAIServer(Behaviour(model=model, faults=Faults(drip_seconds=0.05))) as server:
        started = time.monotonic()
        checks = results(smoke(server.base_url, "--model", model, "--timeout", "1"))
        elapsed = time.monotonic() - started
    for name in ("chat-reasoning-on", "chat-reasoning-off", "tool-call"):
        assert checks[name] == ("FAIL", "no complete answer within 1s")
    assert checks["chat-stream"][0] == "PASS"  # streams are not dripped
    assert elapsed < 3 * 1 + 2


def test_the_api_key_comes_from_the_environment_and_is_never_printed():
    model, key = SERVED_MODELS[0], "sk-test-4f1c"
    with FakeOpenAIServer(Behaviour(model=model, api_key=key)) as server:
        accepted = smoke(server.base_url, "--model", model, env={"OPENAI_API_KEY": key})
        refused = smoke(server.base_url, "--model", model)
    assert accepted.returncode == 0
    assert refused.returncode == 1 and "HTTP 401" in results(refused)["models"][1]
    assert key not in accepted.stdout + accepted.stderr


def test_an_unreachable_endpoint_fails_every_check():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = smoke(f"http://127.0.0.1:{port}/v1", "--model", SERVED_MODELS[0], "--timeout", "2")
    assert run.returncode == 1
    assert all(status == "FAIL" and "unreachable" in reason for status, reason in results(run).values())


def test_waiting_for_the_model_gives_up_after_the_wait():
    model = SERVED_MODELS[0]
    with FakeOpenAIServer(Behaviour(model=model, faults=Faults(models_missing=True))) as server:
        run = smoke(server.base_url, "--model", model, "--wait", "1")
    assert run.returncode == 1
    assert f"gave up waiting for {model} after 1s: model not listed yet" in run.stdout
    assert server.chat_requests == 0


@pytest.mark.parametrize(
    "arguments",
    [
        [],
        ["--base-url", "localhost:8000/v1", "--model", "m"],
        ["--base-url", "http://localhost:8000/v1", "--model", "m", "--timeout", "0"],
        ["--base-url", "http://localhost:8000/v1", "--model", "m", "--max-tokens", "-1"],
    ],
)
def test_bad_arguments_exit_2(arguments):
    run = subprocess.run([sys.executable, str(PROGRAM), *arguments], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2
    assert "usage:" in run.stderr
