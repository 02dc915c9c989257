"""A stand-in for a Dynamo frontend on loopback: OpenAI-compatible chat completions (JSON and SSE) after
a fixed latency, answering as `--backend-id` so a test can tell which backend served each request.

Stdlib only and run as its own process (`python -m tools.gateway_loopback.openai_backend --port ...`), so a test can SIGKILL
it (a dead target) or SIGSTOP it (a hung one: the kernel still accepts connections, nothing answers).
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from http.server import ThreadingHTTPServer
from typing import Any

from tools.gateway_loopback.json_handler import JsonHandler

STREAM_CHUNKS = 4


def completion(model: str, backend_id: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": f"answered by {backend_id}"},
            }
        ],
        "usage": {"prompt_tokens": 8, "completion_tokens": 3, "total_tokens": 11},
    }


def chunk(model: str, chunk_id: str, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    body = {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


class Handler(JsonHandler):
    server: BackendServer

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": self.server.model, "object": "model"}]})
        else:
            self._json(200, {"status": "ok"})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        latency = self.server.latency_seconds
        if not request.get("stream"):
            time.sleep(latency)
            self._json(200, completion(self.server.model, self.server.backend_id))
            return
        # Time to first token is half the latency; the other half is spread over the chunks.
        time.sleep(latency / 2)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
        model = self.server.model
        self.wfile.write(chunk(model, chunk_id, {"role": "assistant", "content": ""}))
        for index in range(STREAM_CHUNKS):
            time.sleep(latency / 2 / STREAM_CHUNKS)
            text = f"answered by {self.server.backend_id}" if index == 0 else "."
            self.wfile.write(chunk(model, chunk_id, {"content": text}))
            self.wfile.flush()
        self.wfile.write(chunk(model, chunk_id, {}, "stop"))
        self.wfile.write(b"data: [DONE]\n\n")


class BackendServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, port: int, model: str, backend_id: str, latency_seconds: float) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.model, self.backend_id, self.latency_seconds = model, backend_id, latency_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--backend-id", required=True)
    parser.add_argument("--latency", type=float, default=0.3)
    args = parser.parse_args()
    server = BackendServer(args.port, args.model, args.backend_id, args.latency)
    print(f"listening on {args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
