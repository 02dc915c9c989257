"""A bounded closed-loop load through the gateway (stdlib HTTP, N requests at C concurrent) and the
figures the failover tests and the benchmark report: failed, p50/p99 latency, fallback share, and who
answered (the `x-litellm-model-group` / `x-litellm-model-id` headers and the response's `model`)."""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Outcome:
    index: int
    started: float  # monotonic seconds
    latency: float
    status: int  # HTTP status; 0 when the connection failed
    model: str  # the response's `model`: which model answered
    group: str  # x-litellm-model-group: the model group that answered
    deployment: str  # x-litellm-model-id: the deployment (target or endpoint) that answered
    content: str
    error: str

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.error


def _stream_body(response: http.client.HTTPResponse) -> tuple[str, str, str]:
    """(model, content, error) of an SSE stream; an `error` event or a cut stream is an error."""
    model, done = "", False
    parts: list[str] = []
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            done = True
            break
        event = json.loads(data)
        if "error" in event:
            return model, "".join(parts), json.dumps(event["error"])
        model = event.get("model") or model
        for choice in event.get("choices", []):
            parts.append((choice.get("delta") or {}).get("content") or "")
    return model, "".join(parts), "" if done else "stream ended before [DONE]"


def send(base_url: str, key: str, model: str, index: int, stream: bool, timeout: float) -> Outcome:
    target, started = urlsplit(base_url), time.monotonic()
    messages = [{"role": "user", "content": f"request {index}"}]
    body = json.dumps({"model": model, "stream": stream, "max_tokens": 16, "messages": messages})
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=timeout)
    try:
        connection.request("POST", "/v1/chat/completions", body=body, headers=headers)
        response = connection.getresponse()
        group, deployment = (response.getheader(h, "") for h in ("x-litellm-model-group", "x-litellm-model-id"))
        if response.status != 200:
            text = response.read().decode(errors="replace")[:300]
            return Outcome(index, started, time.monotonic() - started, response.status, "", group, deployment, "", text)
        if stream:
            answered, content, error = _stream_body(response)
        else:
            payload = json.loads(response.read())
            answered, content, error = payload.get("model", ""), payload["choices"][0]["message"]["content"], ""
        return Outcome(index, started, time.monotonic() - started, 200, answered, group, deployment, content, error)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return Outcome(index, started, time.monotonic() - started, 0, "", "", "", "", repr(exc))
    finally:
        connection.close()


def run_load(
    base_url: str,
    key: str,
    model: str,
    total: int,
    concurrency: int,
    *,
    stream: bool = False,
    timeout: float = 30.0,
    deadline_seconds: float = 120.0,
    actions: Optional[Mapping[int, Callable[[], None]]] = None,
) -> list[Outcome]:
    """`total` requests, `concurrency` at a time; `actions[i]` runs just before request i is sent (a
    backend killed mid-run). Nothing is sent after `deadline_seconds` (so a run lasts at most that plus
    one request `timeout`): the outcomes are then fewer than `total`, which the figures show."""
    actions = dict(actions or {})
    semaphore = threading.BoundedSemaphore(concurrency)
    futures = []
    stop_at = time.monotonic() + deadline_seconds
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for index in range(total):
            semaphore.acquire()
            if time.monotonic() > stop_at:
                semaphore.release()
                break
            if index in actions:
                actions[index]()
            future = pool.submit(send, base_url, key, model, index, stream, timeout)
            future.add_done_callback(lambda _: semaphore.release())
            futures.append(future)
    return [f.result() for f in futures]


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(fraction * 100) - 1]


@dataclass(frozen=True)
class Figures:
    scenario: str
    requests: int
    failed: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    fallback_share: float  # answered by a group other than the requested model
    answered_by_group: Mapping[str, int]

    @classmethod
    def of(cls, scenario: str, requested_model: str, outcomes: list[Outcome]) -> Figures:
        latencies = [o.latency * 1000 for o in outcomes]
        answered = [o for o in outcomes if o.ok]
        by_group = Counter(o.group for o in answered)
        fallback = sum(1 for o in answered if o.group != requested_model)
        p50, p99 = (round(percentile(latencies, q), 1) for q in (0.5, 0.99))
        share = round(fallback / len(answered), 3) if answered else 0.0
        return cls(
            scenario,
            len(outcomes),
            len(outcomes) - len(answered),
            p50,
            p99,
            round(max(latencies), 1),
            share,
            dict(by_group),
        )

    def line(self) -> str:
        groups = ", ".join(f"{group or '?'}: {count}" for group, count in sorted(self.answered_by_group.items()))
        return (
            f"{self.scenario}: {self.requests} requests, failed {self.failed}, p50 {self.p50_ms:.0f} ms, "
            f"p99 {self.p99_ms:.0f} ms, max {self.max_ms:.0f} ms, fallback share {self.fallback_share:.0%} "
            f"({groups})"
        )
