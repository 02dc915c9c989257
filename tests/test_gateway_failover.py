"""The gateway config the stack generates for prod, run by the real LiteLLM proxy (`.venv-gateway`) on
loopback in front of one local process per Dynamo frontend and per SageMaker endpoint (a SigV4-checking
stand-in): a dead frontend costs no request, a dead model tier fails over to the same model on
SageMaker, then to the named degraded fallback, a hung frontend costs bounded latency, and a frontend
that comes back gets traffic again after the cooldown. Each scenario is bounded (200 requests at 8
concurrent) and prints its figures."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from gateway_helpers import ScenarioBackends, scenario_backends
from gateway_loopback import scenarios
from gateway_loopback.processes import litellm_executable
from gateway_loopback.stack_backends import BACKEND_LATENCY_SECONDS, CONCURRENCY, LOOPBACK_TIMINGS, REQUESTS

from serving_stack.plan.gateway import DYNAMO_ID_PREFIX, SAGEMAKER_GROUP_SUFFIX, SAGEMAKER_ID_PREFIX

# The real LiteLLM proxy on loopback: `make test-all`.
pytestmark = pytest.mark.slow

# Fault figures are compared with a baseline run through the same gateway first: the machine is shared.
BASELINE_REQUESTS = 4 * CONCURRENCY


@pytest.fixture(scope="module")
def prod() -> ScenarioBackends:
    litellm_executable()  # fail with the make target to run, never skip
    return scenario_backends()


def gateway(prod: ScenarioBackends, workdir: Path):
    settings = prod.settings(replicas=1, **LOOPBACK_TIMINGS)
    return scenarios.loopback_gateway(prod.dynamo, prod.sagemaker, settings, workdir, BACKEND_LATENCY_SECONDS)


def sigv4_counts(process) -> dict[str, int]:
    with urllib.request.urlopen(process.url, timeout=5) as response:
        return json.loads(response.read())


def test_dead_frontend_costs_no_request_and_gets_traffic_back_after_restart(prod, tmp_path, capsys):
    with gateway(prod, tmp_path) as gw:
        killed = scenarios.kill_one_backend(gw, prod.model, REQUESTS, CONCURRENCY)
        victim_id = f"{DYNAMO_ID_PREFIX}{prod.dynamo[0].id}"
        restored = scenarios.restore_after_kill(gw, prod.model, CONCURRENCY, deadline_seconds=30)
        streaming = scenarios.kill_one_backend_streaming(gw, prod.model, REQUESTS // 2, CONCURRENCY)
    with capsys.disabled():
        for result in (killed, restored, streaming):
            print(f"\n  {result.figures.line()}")
    assert (killed.figures.requests, streaming.figures.requests) == (REQUESTS, REQUESTS // 2), "a run hit its deadline"
    assert killed.figures.failed == 0
    # Other frontends of the model are alive: they answer, bar a request whose retries all met the dead
    # one before its cooldown (it then gets the same model from SageMaker, never another model).
    assert killed.figures.fallback_share <= 0.02
    assert {o.model for o in killed.outcomes} == {prod.model}
    answered_by = {o.deployment for o in killed.outcomes if o.group == prod.model}
    assert answered_by == {f"{DYNAMO_ID_PREFIX}{b.id}" for b in prod.dynamo}
    late = [o for o in killed.outcomes if o.index >= REQUESTS // 2]
    assert victim_id not in {o.deployment for o in late}
    # Back within one cooldown (plus the load's own granularity).
    assert restored.figures.failed == 0
    assert restored.seconds <= LOOPBACK_TIMINGS["cooldownSeconds"] + 5
    assert any(o.deployment == victim_id for o in restored.outcomes[-CONCURRENCY:] if o.ok)
    # Streams fail over only before their first chunk: at most those under way when the frontend died.
    assert streaming.figures.failed <= CONCURRENCY


def test_hung_frontend_costs_bounded_latency(prod, tmp_path, capsys):
    with gateway(prod, tmp_path) as gw:
        normal = scenarios.baseline(gw, prod.model, BASELINE_REQUESTS, CONCURRENCY)
        hung = scenarios.hang_one_backend(gw, prod.model, REQUESTS, CONCURRENCY)
    with capsys.disabled():
        print(f"\n  {normal.figures.line()}\n  {hung.figures.line()}")
    assert hung.figures.requests == REQUESTS and hung.figures.failed == 0
    settings = prod.settings(**LOOPBACK_TIMINGS)
    # Every attempt on the hung frontend ends at `timeout`; a request makes at most num_retries + 1.
    bound_ms = ((settings.router.numRetries + 1) * settings.router.timeoutSeconds + 1) * 1000
    assert hung.figures.max_ms <= bound_ms
    # It is cooled down after allowed_fails + 1 timeouts: most requests never meet it.
    assert hung.figures.p50_ms <= 2 * normal.figures.p50_ms
    slow = [o for o in hung.outcomes if o.latency >= settings.router.timeoutSeconds]
    assert len(slow) <= 2 * CONCURRENCY


def test_dead_model_tier_fails_over_to_sagemaker_then_to_the_named_degraded_model(prod, tmp_path, capsys):
    with gateway(prod, tmp_path) as gw:
        same_model = gw.backends[f"{SAGEMAKER_ID_PREFIX}{prod.same_model_endpoint.id}"]
        normal = scenarios.baseline(gw, prod.model, BASELINE_REQUESTS, CONCURRENCY)
        fallback = scenarios.kill_all_dynamo(gw, prod.model, REQUESTS, CONCURRENCY)
        signed = sigv4_counts(same_model)
        # Fewer requests: each pays the dead tiers' retries (seconds), see below.
        degraded = scenarios.degraded_only(gw, prod.model, 3 * CONCURRENCY, CONCURRENCY)
    with capsys.disabled():
        print(f"\n  {normal.figures.line()}\n  {fallback.figures.line()}\n  {degraded.figures.line()}")
    assert fallback.figures.requests == REQUESTS and fallback.figures.failed == 0
    after_kill = [o for o in fallback.outcomes if o.index >= REQUESTS // 2]
    assert {o.group for o in after_kill} == {f"{prod.model}{SAGEMAKER_GROUP_SUFFIX}"}
    assert {o.deployment for o in after_kill} == {f"{SAGEMAKER_ID_PREFIX}{prod.same_model_endpoint.id}"}
    assert {o.model for o in after_kill} == {prod.model}, "failover keeps the model"
    # The dead Dynamo deployments are cooled down (BerriAI/litellm#40405): requests go straight to the
    # fallback instead of paying the dead frontends' retries first.
    assert fallback.figures.p50_ms <= 2 * normal.figures.p50_ms
    assert signed["accepted"] >= len(after_kill) and signed["rejected"] == 0, signed
    # Only another model left: it answers, and every answer names it.
    assert degraded.figures.requests == 3 * CONCURRENCY and degraded.figures.failed == 0
    assert {o.model for o in degraded.outcomes} == {prod.degraded_endpoint.servedModelName}
    assert {o.group for o in degraded.outcomes} == {prod.degraded_endpoint.servedModelName}
    assert {o.deployment for o in degraded.outcomes} == {f"{SAGEMAKER_ID_PREFIX}{prod.degraded_endpoint.id}"}
    # Bounded, not fast: with both tiers of the model down, a request pays their retries first.
    settings = prod.settings(**LOOPBACK_TIMINGS)
    assert degraded.figures.max_ms <= 4 * (settings.router.numRetries + 1) * settings.router.timeoutSeconds * 1000
