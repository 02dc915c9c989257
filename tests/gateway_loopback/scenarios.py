"""Failover scenarios on loopback: the gateway config the stack generates, run by the real LiteLLM proxy
in front of local backends (one process per Dynamo frontend and per SageMaker endpoint).

Each scenario is bounded in requests and time and returns its `Figures` plus what the caller asserts
on; the tests (`tests/test_gateway_failover.py`) and the benchmark (`benchmarks/gateway_failover.py`)
run the same functions.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from gateway_loopback.load import Figures, Outcome, run_load, send
from gateway_loopback.processes import (
    Process,
    loopback_config,
    restart,
    start_openai_backend,
    start_proxy,
    start_sagemaker_runtime,
)

from serving_stack.config.gateway import GatewayConfig
from serving_stack.contract.outputs import ServingEndpoint
from serving_stack.plan.gateway import (
    DYNAMO_ID_PREFIX,
    SAGEMAKER_ID_PREFIX,
    GatewayPlan,
    plan_gateway,
)


@dataclass
class LoopbackGateway:
    plan: GatewayPlan
    proxy: Process
    backends: dict[str, Process]  # by deployment id (`dynamo:<target>`, `sagemaker:<endpoint>`)
    workdir: Path
    master_key: str
    settings: GatewayConfig
    restarted: list[Process] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.proxy.url

    def dynamo(self, model: str) -> list[Process]:
        group = next(g for g in self.plan.groups if g.name == model and g.kind == "dynamo")
        return [self.backends[i] for i in self.plan.deployment_ids(group.name)]

    def load(self, model: str, total: int, concurrency: int, **options: object) -> list[Outcome]:
        return run_load(self.base_url, self.master_key, model, total, concurrency, **options)  # type: ignore[arg-type]

    def restart(self, deployment_id: str) -> Process:
        process = restart(self.backends[deployment_id], self.workdir)
        self.backends[deployment_id] = process
        self.restarted.append(process)
        return process


def kill_all(processes: Sequence[Process]) -> None:
    for process in processes:
        process.kill()


@contextmanager
def loopback_gateway(
    dynamo: Sequence[ServingEndpoint],
    sagemaker: Sequence[ServingEndpoint],
    settings: GatewayConfig,
    workdir: Path,
    latency: float = 0.3,
) -> Iterator[LoopbackGateway]:
    """Backends, SageMaker stand-ins and the proxy, started; every process stopped on exit."""
    plan = plan_gateway(dynamo, sagemaker, settings)
    with ExitStack() as cleanup:
        backends: dict[str, Process] = {}
        for backend in dynamo:
            process = start_openai_backend(backend.id, backend.servedModelName, latency, workdir)
            cleanup.callback(process.kill)
            backends[f"{DYNAMO_ID_PREFIX}{backend.id}"] = process
        for endpoint in sagemaker:
            process = start_sagemaker_runtime(endpoint.id, endpoint.region, endpoint.servedModelName, latency, workdir)
            cleanup.callback(process.kill)
            backends[f"{SAGEMAKER_ID_PREFIX}{endpoint.id}"] = process
        master_key = f"sk-loopback-{secrets.token_hex(16)}"
        proxy = start_proxy(loopback_config(plan.config, {i: p.url for i, p in backends.items()}), master_key, workdir)
        cleanup.callback(proxy.kill)
        gateway = LoopbackGateway(plan, proxy, backends, workdir, master_key, settings)
        cleanup.callback(lambda: kill_all(gateway.restarted))
        yield gateway


@dataclass(frozen=True)
class Result:
    figures: Figures
    outcomes: list[Outcome]
    seconds: float = 0.0  # a duration the scenario measures (time for traffic to return)


def baseline(gateway: LoopbackGateway, model: str, total: int, concurrency: int) -> Result:
    """Every backend up: the reference the fault scenarios are compared with on this (shared) machine."""
    outcomes = gateway.load(model, total, concurrency)
    return Result(Figures.of("baseline, all backends up", model, outcomes), outcomes)


def kill_one_backend(gateway: LoopbackGateway, model: str, total: int, concurrency: int) -> Result:
    """SIGKILL one Dynamo frontend a quarter into the run."""
    victim = gateway.dynamo(model)[0]
    outcomes = gateway.load(model, total, concurrency, actions={total // 4: victim.kill})
    return Result(Figures.of("kill one Dynamo backend mid-run", model, outcomes), outcomes)


def kill_one_backend_streaming(gateway: LoopbackGateway, model: str, total: int, concurrency: int) -> Result:
    """The same with streaming: streams already under way when the frontend dies cannot fail over."""
    victim = gateway.dynamo(model)[0]
    outcomes = gateway.load(model, total, concurrency, stream=True, actions={total // 4: victim.kill})
    return Result(Figures.of("kill one Dynamo backend mid-run (streaming)", model, outcomes), outcomes)


def kill_all_dynamo(gateway: LoopbackGateway, model: str, total: int, concurrency: int) -> Result:
    """SIGKILL every Dynamo frontend of the model a fifth into the run: the fallbacks answer."""
    victims = gateway.dynamo(model)
    outcomes = gateway.load(model, total, concurrency, actions={total // 5: lambda: kill_all(victims)})
    return Result(Figures.of("kill all Dynamo backends mid-run", model, outcomes), outcomes)


def degraded_only(gateway: LoopbackGateway, model: str, total: int, concurrency: int) -> Result:
    """Every Dynamo frontend and every same-model SageMaker endpoint down from the start: only the named
    degraded fallback (another model) is left."""
    for group in gateway.plan.groups:
        if group.servedModelName == model:
            for deployment_id in gateway.plan.deployment_ids(group.name):
                gateway.backends[deployment_id].kill()
    outcomes = gateway.load(model, total, concurrency)
    return Result(Figures.of("only the degraded fallback left", model, outcomes), outcomes)


def hang_one_backend(gateway: LoopbackGateway, model: str, total: int, concurrency: int) -> Result:
    """SIGSTOP one Dynamo frontend a quarter into the run: connections open, nothing answers."""
    victim = gateway.dynamo(model)[0]
    outcomes = gateway.load(model, total, concurrency, actions={total // 4: victim.hang})
    victim.resume()
    return Result(Figures.of("hang one Dynamo backend mid-run", model, outcomes), outcomes)


def restore_after_kill(gateway: LoopbackGateway, model: str, concurrency: int, deadline_seconds: float) -> Result:
    """Kill one frontend, let the gateway cool it down under load, bring it back on the same address and
    measure how long until it answers through the gateway again."""
    victim_id = next(i for i, p in gateway.backends.items() if p is gateway.dynamo(model)[0])
    victim_name = victim_id.removeprefix(DYNAMO_ID_PREFIX)
    gateway.backends[victim_id].kill()
    outcomes = gateway.load(model, 4 * concurrency, concurrency)
    gateway.restart(victim_id)
    restored_at = time.monotonic()
    while time.monotonic() - restored_at < deadline_seconds:
        batch = gateway.load(model, concurrency, concurrency)
        outcomes += batch
        if any(o.ok and o.deployment == victim_id for o in batch):
            break
    seconds = time.monotonic() - restored_at
    answered = sum(1 for o in outcomes if o.ok and o.started >= restored_at and o.deployment == victim_id)
    figures = Figures.of(f"restore {victim_name}: back after {seconds:.1f} s ({answered} answers)", model, outcomes)
    return Result(figures, outcomes, seconds)


def probe(gateway: LoopbackGateway, model: str) -> Outcome:
    return send(gateway.base_url, gateway.master_key, model, 0, False, 30.0)
