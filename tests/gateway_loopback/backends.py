"""Loopback stand-ins for what the gateway talks to, each run as its own process so a test can SIGKILL it (a
dead target) or SIGSTOP it (a hung one: the kernel still accepts connections, nothing answers). Stdlib and
botocore only, HTTP/1.1 keep-alive, JSON replies with their length:

- `openai`: a Dynamo frontend's OpenAI-compatible chat completions (JSON and SSE) after a fixed latency,
  answering as `--backend-id` so a test can tell which backend served each request;
- `sagemaker`: the SageMaker runtime of one endpoint, `POST /endpoints/<name>/invocations` answered (an LMI
  container's chat completion) only when its SigV4 signature is the one botocore computes from the same (fake)
  credentials, region and service over the signed headers and body; anything else gets the runtime's 403.
"""

from __future__ import annotations

import argparse
import hmac
import json
import re
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

STREAM_CHUNKS = 4
AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[^,]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)


def completion(model: str, answer: str, completion_id: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": answer}
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 8, "completion_tokens": 3, "total_tokens": 11},
    }


def chunk(model: str, chunk_id: str, delta: dict[str, Any], finish_reason: Optional[str] = None) -> bytes:
    choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    body = {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def signature_problem(
    method: str,
    host_url: str,
    path: str,
    headers: Any,
    body: bytes,
    credentials: Credentials,
    region: str,
    endpoint: str,
) -> Optional[str]:
    """Why this request is not a valid SigV4 `sagemaker` request for `endpoint` in `region`, or None."""
    match = AUTHORIZATION.match(headers.get("Authorization", ""))
    if match is None:
        return "missing or malformed AWS4-HMAC-SHA256 Authorization header"
    if match["service"] != "sagemaker" or match["region"] != region:
        return f"signed for service {match['service']!r} in {match['region']!r}, expected 'sagemaker' in {region!r}"
    if match["key"] != credentials.access_key:
        return f"signed with access key {match['key']!r}, not the configured one"
    if path != f"/endpoints/{endpoint}/invocations":
        return f"path {path!r} is not the invocations path of endpoint {endpoint!r}"
    signed = {name: headers.get(name, "") for name in match["signed"].split(";")}
    request = AWSRequest(method=method, url=f"{host_url}{path}", data=body, headers=signed)
    request.context["timestamp"] = headers.get("X-Amz-Date", "")
    auth = SigV4Auth(credentials, "sagemaker", region)
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    return None if hmac.compare_digest(expected, match["signature"]) else "signature does not match the request"


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, port: int, handler: type[BaseHTTPRequestHandler], args: argparse.Namespace) -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.args, self.accepted, self.rejected = args, 0, 0


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))


class OpenAIHandler(JsonHandler):
    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": self.server.args.model, "object": "model"}]})
        else:
            self._json(200, {"status": "ok"})

    def do_POST(self) -> None:
        request = json.loads(self._body() or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        model, backend_id, latency = self.server.args.model, self.server.args.backend_id, self.server.args.latency
        if not request.get("stream"):
            time.sleep(latency)
            self._json(200, completion(model, f"answered by {backend_id}", f"chatcmpl-{uuid.uuid4().hex}"))
            return
        time.sleep(latency / 2)  # time to first token is half the latency; the other half is spread over the chunks
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
        self.wfile.write(chunk(model, chunk_id, {"role": "assistant", "content": ""}))
        for index in range(STREAM_CHUNKS):
            time.sleep(latency / 2 / STREAM_CHUNKS)
            self.wfile.write(chunk(model, chunk_id, {"content": f"answered by {backend_id}" if index == 0 else "."}))
            self.wfile.flush()
        self.wfile.write(chunk(model, chunk_id, {}, "stop") + b"data: [DONE]\n\n")


class SageMakerHandler(JsonHandler):
    def do_POST(self) -> None:
        server, args, body = self.server, self.server.args, self._body()
        credentials = Credentials(args.access_key, args.secret_key)
        host = f"http://{self.headers.get('Host', '')}"
        problem = signature_problem(
            "POST", host, self.path, self.headers, body, credentials, args.region, args.endpoint
        )
        if problem:
            server.rejected += 1
            self._json(403, {"message": f"SigV4 check failed: {problem}"})
            return
        server.accepted += 1
        time.sleep(args.latency)
        answer = f"answered by sagemaker:{args.endpoint}"
        self._json(200, completion(args.model, answer, f"chatcmpl-sagemaker-{server.accepted}"))

    def do_GET(self) -> None:
        self._json(200, {"accepted": self.server.accepted, "rejected": self.server.rejected})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("openai", "sagemaker"))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--latency", type=float, default=0.3)
    for flag in ("--backend-id", "--endpoint", "--region", "--access-key", "--secret-key"):
        parser.add_argument(flag)
    args = parser.parse_args()
    server = Server(args.port, OpenAIHandler if args.kind == "openai" else SageMakerHandler, args)
    print(f"listening on {args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
