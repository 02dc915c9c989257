#!/usr/bin/env python3
"""Does an OpenAI-compatible Nemotron endpoint serve? Five checks, one line each, exit 0 only if all pass.

Runs in-cluster (a Job on python:3.12-slim, shipped in a ConfigMap) and from a laptop against a
port-forward, so it is one stdlib-only file. The recipe page's smoke test is one curl; this checks
what agents rely on: the model is listed, reasoning can be turned on and off, streaming ends
properly, and a tool call comes back well formed.

Reasoning toggle: Nemotron 3 / 3.5 chat templates take `enable_thinking` through the request's
`chat_template_kwargs` (NVIDIA model cards, "reasoning ... configured through a flag in the chat
template"; vLLM's `nemotron_v3` reasoning parser reads `chat_template_kwargs.enable_thinking`;
Dynamo's frontend accepts `chat_template_kwargs` since ai-dynamo/dynamo#3016 and its `nemotron_nano`
parser honours `enable_thinking=false` since ai-dynamo/dynamo#6288). Parsed reasoning arrives in
`reasoning_content` (Dynamo) or `reasoning` (newer vLLM): either counts.

Time: each check ends within --timeout. urllib's timeout bounds each socket operation, not a whole
answer (a server dripping bytes would hold it forever), so every check runs in a daemon thread that
is abandoned after --timeout.

About 300 lines, over the project's 250: the checks and their HTTP/SSE client stay in one file so
it runs alone anywhere with Python 3.9+ (canary.py and run_benchmark.py import its client).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Optional, TypeVar

PROMPT = "What is 17 + 25? Reply with the number only."
EXPECTED_ANSWER = "42"
REASON_CHARS = 160
POLL_SECONDS = 5.0
T = TypeVar("T")
TOOL_NAME = "get_weather"
WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"],
        },
    },
}


class CheckFailedError(Exception):
    """The endpoint answered, but not as it should: the message is the one-line reason."""


@dataclass(frozen=True)
class Client:
    base_url: str  # the OpenAI base URL, with /v1 (as the stack's outputs contract gives it)
    timeout: float
    api_key: Optional[str] = None

    def _request(self, path: str, body: Optional[dict[str, Any]] = None) -> urllib.request.Request:
        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        return urllib.request.Request(self.base_url.rstrip("/") + path, data=data, headers=headers)

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self._request(path), timeout=self.timeout) as response:
            return json.load(response)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        with urllib.request.urlopen(self._request(path, body), timeout=self.timeout) as response:
            return json.load(response)

    def stream(self, path: str, body: dict[str, Any]) -> Iterator[str]:
        """The `data:` payloads of a server-sent event stream."""
        with urllib.request.urlopen(self._request(path, body), timeout=self.timeout) as response:
            for raw in response:
                line = raw.decode("utf-8").rstrip("\r\n")
                if line.startswith("data:"):
                    yield line[len("data:") :].strip()


def within(seconds: float, function: Callable[[], T]) -> T:
    """`function()`, or TimeoutError once `seconds` have passed (the thread is left behind, a daemon)."""
    values: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            values.append(function())
        except BaseException as error:  # handed to the caller as is
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"no complete answer within {seconds:g}s")
    if errors:
        raise errors[0]
    return values[0]


def chat_body(model: str, prompt: str, *, thinking: bool, max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "chat_template_kwargs": {"enable_thinking": thinking},
        **extra,
    }


def served_models(client: Client) -> list[str]:
    return [str(entry.get("id")) for entry in client.get("/models").get("data", [])]


def wait_until_served(client: Client, model: str, seconds: float, log: Callable[[str], None] = print) -> bool:
    """Poll /v1/models until it lists the model (a frontend answers /health before any worker is up)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if model in served_models(client):
                return True
            state = "model not listed yet"
        except (OSError, ValueError) as error:
            state = describe(error)
        if time.monotonic() + POLL_SECONDS > deadline:
            log(f"gave up waiting for {model} after {seconds:g}s: {state}")
            return False
        time.sleep(POLL_SECONDS)


def first_message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices") or []
    if not choices or not isinstance(choices[0].get("message"), dict):
        raise CheckFailedError(f"no choices[0].message in response: {json.dumps(response)[:80]}")
    message: dict[str, Any] = choices[0]["message"]
    return message


def _reasoning_text(part: dict[str, Any]) -> str:
    return str(part.get("reasoning_content") or part.get("reasoning") or "")


def check_models(client: Client, model: str, max_tokens: int) -> str:
    models = served_models(client)
    if model not in models:
        raise CheckFailedError(f"{model} not in /v1/models: {models}")
    return f"served ({len(models)} model(s) listed)"


def check_reasoning_on(client: Client, model: str, max_tokens: int) -> str:
    message = first_message(
        client.post("/chat/completions", chat_body(model, PROMPT, thinking=True, max_tokens=max_tokens))
    )
    reasoning, content = _reasoning_text(message), str(message.get("content") or "")
    if not reasoning:
        raise CheckFailedError("enable_thinking=true but no reasoning_content/reasoning in the message")
    if EXPECTED_ANSWER not in content:
        raise CheckFailedError(f"content lacks the answer {EXPECTED_ANSWER}: {content!r}")
    return f"{len(reasoning)} reasoning chars, answer {EXPECTED_ANSWER}"


def check_reasoning_off(client: Client, model: str, max_tokens: int) -> str:
    message = first_message(
        client.post("/chat/completions", chat_body(model, PROMPT, thinking=False, max_tokens=max_tokens))
    )
    reasoning, content = _reasoning_text(message), str(message.get("content") or "")
    if reasoning:
        raise CheckFailedError(f"enable_thinking=false but {len(reasoning)} reasoning chars came back")
    if "<think>" in content or "</think>" in content:
        raise CheckFailedError("think tags leaked into content")
    if EXPECTED_ANSWER not in content:
        raise CheckFailedError(f"content lacks the answer {EXPECTED_ANSWER}: {content!r}")
    return f"no reasoning, answer {EXPECTED_ANSWER}"


def check_stream(client: Client, model: str, max_tokens: int) -> str:
    body = chat_body(
        model, PROMPT, thinking=False, max_tokens=max_tokens, stream=True, stream_options={"include_usage": True}
    )
    started, first_content, deltas, usage, done = time.monotonic(), None, 0, None, False
    for payload in client.stream("/chat/completions", body):
        if payload == "[DONE]":
            done = True
            break
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise CheckFailedError(f"an event is not JSON: {payload[:60]!r}") from None
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            if (choice.get("delta") or {}).get("content"):
                deltas += 1
                first_content = first_content if first_content is not None else time.monotonic() - started
    if not done:
        raise CheckFailedError(f"stream ended without [DONE] after {deltas} content deltas")
    if first_content is None:
        raise CheckFailedError("stream ended with [DONE] but no content delta")
    if not usage or not usage.get("completion_tokens"):
        raise CheckFailedError(
            "no usage chunk despite stream_options.include_usage (AIPerf's server token counts need it)"
        )
    return f"{deltas} content deltas, first after {first_content * 1000:.0f} ms, {usage['completion_tokens']} tokens"


def check_tool_call(client: Client, model: str, max_tokens: int) -> str:
    body = chat_body(
        model,
        "What is the weather in Paris right now? Use the tool.",
        thinking=False,
        max_tokens=max_tokens,
        tools=[WEATHER_TOOL],
        tool_choice="auto",
    )
    calls = first_message(client.post("/chat/completions", body)).get("tool_calls")
    if not isinstance(calls, list) or not calls:
        raise CheckFailedError("no tool_calls in the message")
    call = calls[0]
    function = call.get("function") or {}
    if not call.get("id") or call.get("type") != "function":
        raise CheckFailedError(f"tool call lacks an id or type 'function': {json.dumps(call)[:80]}")
    if function.get("name") != TOOL_NAME:
        raise CheckFailedError(f"called {function.get('name')!r}, not a declared tool")
    try:
        arguments = json.loads(function.get("arguments") or "")
    except ValueError:
        raise CheckFailedError(f"arguments are not JSON: {function.get('arguments')!r}") from None
    if not isinstance(arguments, dict) or not isinstance(arguments.get("city"), str):
        raise CheckFailedError(f"arguments lack the required string 'city': {arguments!r}")
    return f"get_weather({json.dumps(arguments)})"


CHECKS: dict[str, Callable[[Client, str, int], str]] = {
    "models": check_models,
    "chat-reasoning-on": check_reasoning_on,
    "chat-reasoning-off": check_reasoning_off,
    "chat-stream": check_stream,
    "tool-call": check_tool_call,
}


def describe(error: BaseException) -> str:
    if isinstance(error, urllib.error.HTTPError):
        body = error.read().decode("utf-8", "replace")
        return f"HTTP {error.code}: {body}"
    if isinstance(error, urllib.error.URLError):
        return f"unreachable: {error.reason}"
    if isinstance(error, TimeoutError):
        return str(error) or "timed out"
    return f"{type(error).__name__}: {error}"


def one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def run_checks(client: Client, model: str, max_tokens: int, out: Callable[[str], None] = print) -> bool:
    passed = 0
    for name, check in CHECKS.items():
        started = time.monotonic()
        try:
            status, reason = "PASS", within(client.timeout, lambda check=check: check(client, model, max_tokens))
        except CheckFailedError as failure:
            status, reason = "FAIL", str(failure)
        except (OSError, ValueError) as error:  # connection, timeout, HTTP status, bad JSON
            status, reason = "FAIL", describe(error)
        passed += status == "PASS"
        out(f"{status} {name:<18} {(time.monotonic() - started) * 1000:>7.0f} ms  {one_line(reason)}")
    out(f"{'PASS' if passed == len(CHECKS) else 'FAIL'} {passed}/{len(CHECKS)} checks passed")
    return passed == len(CHECKS)


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="OpenAI base URL with /v1, e.g. http://localhost:8000/v1")
    parser.add_argument(
        "--model", required=True, help="served model name, e.g. nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    parser.add_argument("--max-tokens", type=int, default=1024, help="max_tokens per completion (default 1024)")
    parser.add_argument(
        "--wait",
        type=float,
        default=0.0,
        help="first wait up to this many seconds for /v1/models to list the model (default 0)",
    )
    parser.add_argument(
        "--api-key",
        default=os.environ.get("OPENAI_API_KEY"),
        help="bearer token; defaults to $OPENAI_API_KEY (prefer the variable: arguments show in ps)",
    )
    args = parser.parse_args(argv)
    if not args.base_url.startswith(("http://", "https://")):
        parser.error(f"--base-url must start with http:// or https://, got {args.base_url!r}")
    if args.timeout <= 0 or args.max_tokens <= 0 or args.wait < 0:
        parser.error("--timeout and --max-tokens must be > 0, --wait >= 0")
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    client = Client(args.base_url, args.timeout, args.api_key)
    if args.wait and not wait_until_served(client, args.model, args.wait):
        return 1
    return 0 if run_checks(client, args.model, args.max_tokens) else 1


if __name__ == "__main__":
    sys.exit(main())
