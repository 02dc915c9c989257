"""A stand-in for the SageMaker runtime of one endpoint on loopback that checks SigV4 like AWS does.

`POST /endpoints/<name>/invocations` is answered (an LMI container's OpenAI-style chat completion, as
`--model`) only when the request carries `Authorization: AWS4-HMAC-SHA256 Credential=<key>/<date>/
<region>/sagemaker/aws4_request, SignedHeaders=..., Signature=...` whose signature botocore recomputes
from the same (fake) credentials, region and service over the signed headers and the body. Anything
else gets the 403 the runtime returns. Run as its own process, so a test can kill it.
"""

from __future__ import annotations

import argparse
import hmac
import re
import time
from http.server import ThreadingHTTPServer
from typing import Any, Optional

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tools.gateway_loopback.json_handler import JsonHandler

AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[^,]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)


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
    signed = match["signed"].split(";")
    request = AWSRequest(
        method=method, url=f"{host_url}{path}", data=body, headers={name: headers.get(name, "") for name in signed}
    )
    request.context["timestamp"] = headers.get("X-Amz-Date", "")
    auth = SigV4Auth(credentials, "sagemaker", region)
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    if not hmac.compare_digest(expected, match["signature"]):
        return "signature does not match the request"
    return None


class Handler(JsonHandler):
    server: RuntimeServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        server = self.server
        problem = signature_problem(
            "POST",
            f"http://{self.headers.get('Host', '')}",
            self.path,
            self.headers,
            body,
            server.credentials,
            server.region,
            server.endpoint,
        )
        if problem:
            server.rejected += 1
            self._json(403, {"message": f"SigV4 check failed: {problem}"})
            return
        server.accepted += 1
        time.sleep(server.latency_seconds)
        self._json(
            200,
            {
                "id": f"chatcmpl-sagemaker-{server.accepted}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": server.model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": f"answered by sagemaker:{server.endpoint}"},
                    }
                ],
                "usage": {"prompt_tokens": 8, "completion_tokens": 3, "total_tokens": 11},
            },
        )

    def do_GET(self) -> None:
        self._json(200, {"accepted": self.server.accepted, "rejected": self.server.rejected})


class RuntimeServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(
        self, port: int, endpoint: str, region: str, model: str, credentials: Credentials, latency_seconds: float
    ) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.endpoint, self.region, self.model, self.credentials = endpoint, region, model, credentials
        self.latency_seconds = latency_seconds
        self.accepted = self.rejected = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    for flag in ("--endpoint", "--region", "--model", "--access-key", "--secret-key"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.3)
    args = parser.parse_args()
    server = RuntimeServer(
        args.port, args.endpoint, args.region, args.model, Credentials(args.access_key, args.secret_key), args.latency
    )
    print(f"listening on {args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
