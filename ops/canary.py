#!/usr/bin/env python3
"""Send one small chat request to an endpoint every --interval seconds and expose the outcome to Prometheus.

Why a long-running process and not the CronJob the issue names: a CronJob pod lives for seconds, so
Prometheus cannot scrape it. It would have to push to a Pushgateway: an extra component to run and
secure, whose last pushed value stays "fresh" forever after the CronJob stops running (so a dead
canary looks healthy unless every alert also checks push_time_seconds), and which loses the `up`
signal. A single-replica Deployment serving `/metrics`, selected by a PodMonitor, needs nothing
new: Prometheus sees the probe results, and `up == 0` or a stale last-probe timestamp catch a canary
that died. Stdlib only (shipped in the ops ConfigMap beside smoke.py, whose client it uses).

Metrics, labelled {target, model}:
- nemotron_canary_probe_success: 1 if the last probe got a chat completion with content, else 0
- nemotron_canary_probe_duration_seconds: wall time of the last probe
- nemotron_canary_request_duration_seconds: histogram of successful probes' wall time
- nemotron_canary_probes_total{result="success"|"failure"}: probes so far
- nemotron_canary_last_probe_timestamp_seconds: Unix time the last probe finished
A probe never outlasts --timeout (smoke.within), so the loop cannot hang on a dripping server.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

import smoke

PREFIX = "nemotron_canary"
BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0)
PROMPT = "Reply with the single word OK."


def label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """The canary's state, rendered in the Prometheus text exposition format (0.0.4)."""

    def __init__(self, target: str, model: str) -> None:
        self.labels = f'target="{label_value(target)}",model="{label_value(model)}"'
        self.lock = threading.Lock()
        self.success: Optional[int] = None
        self.duration = 0.0
        self.finished_at = 0.0
        self.totals = {"success": 0, "failure": 0}
        self.bucket_counts = [0] * len(BUCKETS)
        self.success_sum = 0.0

    def record(self, passed: bool, seconds: float) -> None:
        with self.lock:
            self.success, self.duration, self.finished_at = int(passed), seconds, time.time()
            self.totals["success" if passed else "failure"] += 1
            if passed:
                self.success_sum += seconds
                self.bucket_counts = [
                    n + (seconds <= bound) for n, bound in zip(self.bucket_counts, BUCKETS, strict=True)
                ]

    def render(self) -> str:
        with self.lock:
            lines = [
                f"# HELP {PREFIX}_probes_total Canary probes by result.",
                f"# TYPE {PREFIX}_probes_total counter",
                *(f'{PREFIX}_probes_total{{{self.labels},result="{r}"}} {n}' for r, n in self.totals.items()),
                f"# HELP {PREFIX}_request_duration_seconds Wall time of successful probes.",
                f"# TYPE {PREFIX}_request_duration_seconds histogram",
                *(
                    f'{PREFIX}_request_duration_seconds_bucket{{{self.labels},le="{b:g}"}} {n}'
                    for b, n in zip(BUCKETS, self.bucket_counts, strict=True)
                ),
                f'{PREFIX}_request_duration_seconds_bucket{{{self.labels},le="+Inf"}} {self.totals["success"]}',
                f"{PREFIX}_request_duration_seconds_sum{{{self.labels}}} {self.success_sum}",
                f"{PREFIX}_request_duration_seconds_count{{{self.labels}}} {self.totals['success']}",
            ]
            if self.success is not None:  # no sample before the first probe: absent, not a false 0
                lines += [
                    f"# HELP {PREFIX}_probe_success 1 if the last probe succeeded.",
                    f"# TYPE {PREFIX}_probe_success gauge",
                    f"{PREFIX}_probe_success{{{self.labels}}} {self.success}",
                    f"# HELP {PREFIX}_probe_duration_seconds Wall time of the last probe.",
                    f"# TYPE {PREFIX}_probe_duration_seconds gauge",
                    f"{PREFIX}_probe_duration_seconds{{{self.labels}}} {self.duration}",
                    f"# HELP {PREFIX}_last_probe_timestamp_seconds When the last probe finished.",
                    f"# TYPE {PREFIX}_last_probe_timestamp_seconds gauge",
                    f"{PREFIX}_last_probe_timestamp_seconds{{{self.labels}}} {self.finished_at}",
                ]
            return "\n".join(lines) + "\n"


def probe(client: smoke.Client, model: str) -> tuple[bool, str]:
    """One small request with reasoning off; success means a completion with content."""
    try:
        body = smoke.chat_body(model, PROMPT, thinking=False, max_tokens=16)
        response = smoke.within(client.timeout, lambda: client.post("/chat/completions", body))
        content = (smoke.first_message(response).get("content") or "").strip()
    except smoke.CheckFailedError as failure:
        return False, str(failure)
    except (OSError, ValueError) as error:
        return False, smoke.describe(error)
    return (True, f"content {content[:20]!r}") if content else (False, "completion without content")


def serve(metrics: Metrics, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/metrics":
                status, body, kind = 200, metrics.render().encode(), "text/plain; version=0.0.4; charset=utf-8"
            else:
                status, body, kind = 404, b"not found\n", "text/plain"
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="OpenAI base URL with /v1")
    parser.add_argument("--model", required=True)
    parser.add_argument("--target", required=True, help="catalog target id (a metric label)")
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between probe starts (default 60)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per probe request (default 30)")
    parser.add_argument("--port", type=int, default=9400, help="metrics port (default 9400; 0 picks a free one)")
    args = parser.parse_args(argv)
    if args.interval <= 0 or args.timeout <= 0:
        parser.error("--interval and --timeout must be > 0")
    metrics = Metrics(args.target, args.model)
    server = serve(metrics, args.port)
    print(f"metrics on :{server.server_address[1]}/metrics", flush=True)
    client = smoke.Client(args.base_url, args.timeout, os.environ.get("OPENAI_API_KEY"))
    while True:
        started = time.monotonic()
        passed, reason = probe(client, args.model)
        elapsed = time.monotonic() - started
        metrics.record(passed, elapsed)
        print(f"{'PASS' if passed else 'FAIL'} canary {elapsed * 1000:>7.0f} ms  {smoke.one_line(reason)}", flush=True)
        time.sleep(max(0.0, args.interval - elapsed))


if __name__ == "__main__":
    sys.exit(main())
