"""A local OpenAI-compatible server on loopback for the ops program tests, with faults to inject.

It behaves like a Dynamo frontend in front of a reasoning model with tool and reasoning parsers:
`/v1/models`, `/v1/chat/completions` (JSON or SSE, `chat_template_kwargs.enable_thinking`, `tools`),
server-side token counts in `usage` (so AIPerf's `--use-server-token-count` works) and, with
`ignore_eos`, exactly `max_completion_tokens` output tokens. Each `Faults` field breaks one behaviour.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

ANSWER = "42"


@dataclass
class Faults:
    models_missing: bool = False  # /v1/models lists another model
    reasoning_ignored: bool = False  # enable_thinking=true yields no reasoning
    reasoning_leak: bool = False  # enable_thinking=false still yields reasoning
    wrong_answer: bool = False  # content is fluent but wrong
    stream_without_done: bool = False
    stream_without_content: bool = False
    stream_without_usage: bool = False
    tool_calls_missing: bool = False  # the model answers in prose instead
    tool_arguments_malformed: bool = False  # arguments are not a JSON object
    chat_status: Optional[int] = None  # every chat completion answers with this HTTP status
    chat_delay_seconds: float = 0.0  # before any chat completion byte is sent
    drip_seconds: float = 0.0  # a JSON chat completion is sent one byte per this many seconds
    failing_requests: set[int] = field(default_factory=set)  # 1-based chat request numbers that answer 500


@dataclass
class Behaviour:
    model: str
    api_key: Optional[str] = None
    ttft_seconds: float = 0.005
    inter_token_seconds: float = 0.0005
    faults: Faults = field(default_factory=Faults)


def _words(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in messages)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        drip = self.server.behaviour.faults.drip_seconds if self.command == "POST" else 0.0
        step = 1 if drip else max(len(data), 1)
        for start in range(0, len(data), step):
            self.wfile.write(data[start : start + step])
            self.wfile.flush()
            time.sleep(drip)

    def _authorized(self) -> bool:
        key = self.server.behaviour.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._send_json(401, {"error": {"message": "invalid api key", "type": "authentication_error"}})
        return False

    def do_GET(self) -> None:
        if not self._authorized():
            return
        if self.path != "/v1/models":
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        behaviour = self.server.behaviour
        served = "someone/else" if behaviour.faults.models_missing else behaviour.model
        self._send_json(200, {"object": "list", "data": [{"id": served, "object": "model", "owned_by": "fake"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self._authorized():
            return
        if self.path != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        number = self.server.count_request()
        faults = self.server.behaviour.faults
        time.sleep(faults.chat_delay_seconds)
        if faults.chat_status is not None or number in faults.failing_requests:
            self._send_json(faults.chat_status or 500, {"error": {"message": "injected failure", "type": "internal"}})
            return
        if body.get("model") != self.server.behaviour.model:
            self._send_json(404, {"error": {"message": f"model {body.get('model')!r} not found"}})
            return
        reply = self.server.reply_for(body)
        if body.get("stream"):
            self._stream(body, reply)
        else:
            self._send_json(200, self.server.completion(body, reply))

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, body: dict[str, Any], reply: dict[str, Any]) -> None:
        behaviour = self.server.behaviour
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        time.sleep(behaviour.ttft_seconds)
        for delta in self.server.deltas(reply):
            self._chunk(f"data: {json.dumps(self.server.chunk(body, delta))}\n\n".encode())
            time.sleep(behaviour.inter_token_seconds)
        if (body.get("stream_options") or {}).get("include_usage") and not behaviour.faults.stream_without_usage:
            usage_chunk = {**self.server.chunk(body, None), "choices": [], "usage": reply["usage"]}
            self._chunk(f"data: {json.dumps(usage_chunk)}\n\n".encode())
        if not behaviour.faults.stream_without_done:
            self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")


class FakeOpenAIServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, behaviour: Behaviour) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour = behaviour
        self.chat_requests = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout under test) closes its socket: not a server error."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (with `/v1`), as the smoke test and the outputs contract name it."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    @property
    def root_url(self) -> str:
        """The frontend's root URL, as AIPerf's `--url` takes it."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()

    def count_request(self) -> int:
        with self._lock:
            self.chat_requests += 1
            return self.chat_requests

    def reply_for(self, body: dict[str, Any]) -> dict[str, Any]:
        """What the model "generates": reasoning, content or tool calls, and the token counts."""
        faults = self.behaviour.faults
        thinking = (body.get("chat_template_kwargs") or {}).get("enable_thinking", True)
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or 64
        reasoning = ""
        if (thinking and not faults.reasoning_ignored) or (not thinking and faults.reasoning_leak):
            reasoning = "The user asks for a sum. Adding the numbers gives the result."
        content = "It is 41." if faults.wrong_answer else f"The answer is {ANSWER}."
        tool_calls: list[dict[str, Any]] = []
        if body.get("tools") and not faults.tool_calls_missing:
            arguments = "city=Paris" if faults.tool_arguments_malformed else json.dumps({"city": "Paris"})
            name = body["tools"][0]["function"]["name"]
            tool_calls = [{"id": "call_0", "type": "function", "function": {"name": name, "arguments": arguments}}]
            content = ""
        if body.get("ignore_eos"):
            content = " ".join(["tok"] * int(limit))  # AIPerf's trace replay: exactly max tokens
        completion_tokens = min(int(limit), len(reasoning.split()) + len(content.split()) + 4 * len(tool_calls))
        usage = {"prompt_tokens": _words(body.get("messages", [])), "completion_tokens": completion_tokens}
        usage["total_tokens"] = usage["prompt_tokens"] + completion_tokens
        return {"reasoning": reasoning, "content": content, "tool_calls": tool_calls, "usage": usage}

    def deltas(self, reply: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if self.behaviour.faults.stream_without_content:
            yield {"role": "assistant", "content": ""}
            return
        for word in reply["reasoning"].split():
            yield {"reasoning_content": word + " "}
        for index, word in enumerate(reply["content"].split()):
            yield {"content": word if index == 0 else " " + word}
        for index, call in enumerate(reply["tool_calls"]):
            yield {"tool_calls": [{"index": index, **call}]}

    def chunk(self, body: dict[str, Any], delta: Optional[dict[str, Any]]) -> dict[str, Any]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": None}]
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body["model"],
            "choices": choices,
        }

    def completion(self, body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply["content"] or None}
        if reply["reasoning"]:
            message["reasoning_content"] = reply["reasoning"]
        if reply["tool_calls"]:
            message["tool_calls"] = reply["tool_calls"]
        finish = "tool_calls" if reply["tool_calls"] else "stop"
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": reply["usage"],
        }
