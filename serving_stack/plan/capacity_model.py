"""The capacity planner's vocabulary: demand, SLO, candidate rows, instance offers, and the search space.

Everything here is plain frozen data so the planner, the brute-force oracle in the tests and the CLI
share one definition of the problem.

Demand is a number of *serving slots*: either concurrent users (each keeps one request in flight) or a
request rate. A request rate is converted per target with Little's law, L = lambda * W, where W is the
time one request holds a slot on that target, measured on the catalog's workload:

    W_t = ttftP50Ms_t / 1000 + outputTokens / tokensPerSecondPerUser_t

so a replica set measured at concurrency C_t serves C_t / W_t requests/s. Faster targets need fewer
slots for the same request rate, which is why the conversion is per target and not one global number.
Input tokens do not enter W beyond the measured TTFT (which already holds the benchmark's prefill); a
token shape far from the benchmark's makes every figure an estimate, and the plan says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Optional

from serving_stack.config.demand import DemandConfig

CapacityType = Literal["on-demand", "spot", "capacity-block"]
CAPACITY_TYPES: tuple[CapacityType, ...] = ("on-demand", "spot", "capacity-block")


@dataclass(frozen=True)
class Slo:
    min_tokens_per_second_per_user: float
    max_ttft_p50_ms: float


@dataclass(frozen=True)
class TokenShape:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Demand:
    """What the user asks for. Exactly one of `concurrent_users` / `requests_per_second` is set;
    `gpu_types` None means every GPU type; `max_targets` None means any number of targets may be mixed."""

    slo: Slo
    concurrent_users: Optional[int] = None
    requests_per_second: Optional[float] = None
    token_shape: Optional[TokenShape] = None
    budget_usd_per_hour: Optional[float] = None
    gpu_types: Optional[tuple[str, ...]] = None
    capacity_types: tuple[CapacityType, ...] = ("on-demand",)
    max_targets: Optional[int] = None

    def __post_init__(self) -> None:
        if (self.concurrent_users is None) == (self.requests_per_second is None):
            raise ValueError("set exactly one of concurrent_users, requests_per_second")
        if self.requests_per_second is not None and self.token_shape is None:
            raise ValueError("a request rate needs the token shape (output tokens per request)")

    @property
    def by_rate(self) -> bool:
        return self.requests_per_second is not None

    @property
    def amount(self) -> float:
        """Users, or requests/s: the unit every capacity figure of a plan is in."""
        return float(self.concurrent_users if self.concurrent_users is not None else self.requests_per_second or 0)

    @property
    def unit(self) -> str:
        return "req/s" if self.by_rate else "users"


@dataclass(frozen=True)
class CandidateRow:
    """One catalog target as the planner sees it. A *replica set* is the recipe's measured unit: its
    worker replicas as published (e.g. 4 workers for a KV-router target, 1 prefill + 1 decode for a
    disaggregated one), measured at `concurrency`. Performance fields are None when unpublished."""

    target_id: str
    gpu: str
    gpus_per_replica_set: int
    gpus_per_worker_pod: int
    worker_replicas: Mapping[str, int]
    concurrency: Optional[int]
    tokens_per_second_per_user: Optional[float]
    ttft_p50_ms: Optional[float]
    output_tokens_per_second_per_gpu: Optional[float]

    @property
    def published(self) -> bool:
        return None not in (
            self.concurrency,
            self.tokens_per_second_per_user,
            self.ttft_p50_ms,
            self.output_tokens_per_second_per_gpu,
        )

    def seconds_per_request(self, output_tokens: int) -> float:
        """Little's-law W: how long one request holds one of the replica set's slots."""
        assert self.ttft_p50_ms is not None
        assert self.tokens_per_second_per_user is not None
        return self.ttft_p50_ms / 1000.0 + output_tokens / self.tokens_per_second_per_user

    def capacity(self, demand: Demand) -> float:
        """What one replica set serves, in the demand's unit (users, or requests/s)."""
        assert self.concurrency is not None
        if demand.token_shape is not None and demand.by_rate:
            return self.concurrency / self.seconds_per_request(demand.token_shape.output_tokens)
        return float(self.concurrency)


@dataclass(frozen=True)
class InstanceOffer:
    """An EC2 instance type with its $/h per node for each capacity type (None: no sourced price)."""

    instance_type: str
    gpu: str
    gpus_per_node: int
    usd_per_hour: Mapping[str, Optional[float]] = field(default_factory=dict)


@dataclass(frozen=True, order=True)
class Pool:
    """A node group the plan may create: one instance type bought one way."""

    instance_type: str
    capacity_type: str
    gpu: str
    gpus_per_node: int
    usd_per_node_hour: float


@dataclass(frozen=True)
class SearchSpace:
    """The discrete problem both the planner and the brute force solve.

    A plan places each chosen target on exactly one pool (a target's `nodePool` is one pool) with
    r >= 1 replica sets; a pool's nodes are ceil(GPUs placed / GPUs per node); several targets may share
    a pool and targets may be mixed (up to `max_targets`). Feasible: sum(r * capacity) >= demand and
    cost <= budget. r is bounded by ceil(demand / capacity) (more sets of one target than it needs to
    carry the whole demand alone never lowers the cost)."""

    demand: float
    rows: tuple[CandidateRow, ...]
    pools: tuple[Pool, ...]
    capacity: Mapping[str, float]
    budget_usd_per_hour: Optional[float]
    max_targets: Optional[int]

    def eligible_pools(self, row: CandidateRow) -> list[Pool]:
        return [p for p in self.pools if p.gpu == row.gpu and p.gpus_per_node % row.gpus_per_worker_pod == 0]

    def max_replica_sets(self, row: CandidateRow) -> int:
        return max(1, math.ceil(self.demand / self.capacity[row.target_id] - 1e-9))


def meets_slo(row: CandidateRow, slo: Slo) -> bool:
    assert row.tokens_per_second_per_user is not None
    assert row.ttft_p50_ms is not None
    return (
        row.tokens_per_second_per_user >= slo.min_tokens_per_second_per_user and row.ttft_p50_ms <= slo.max_ttft_p50_ms
    )


def pools_for(
    offers: tuple[InstanceOffer, ...], gpu_types: Optional[tuple[str, ...]], capacity_types: tuple[str, ...]
) -> tuple[Pool, ...]:
    """Every (instance type, capacity type) with a price, of an allowed GPU type and capacity type."""
    pools = [
        Pool(offer.instance_type, capacity, offer.gpu, offer.gpus_per_node, price)
        for offer in offers
        if gpu_types is None or offer.gpu in gpu_types
        for capacity in capacity_types
        if (price := offer.usd_per_hour.get(capacity)) is not None
    ]
    return tuple(sorted(pools))


def search_space(demand: Demand, rows: tuple[CandidateRow, ...], offers: tuple[InstanceOffer, ...]) -> SearchSpace:
    """The rows that may serve this demand (published, SLO met, allowed GPU type, some priced pool)."""
    pools = pools_for(offers, demand.gpu_types, demand.capacity_types)
    candidates = tuple(
        row
        for row in rows
        if row.published
        and meets_slo(row, demand.slo)
        and any(p.gpu == row.gpu and p.gpus_per_node % row.gpus_per_worker_pod == 0 for p in pools)
    )
    return SearchSpace(
        demand=demand.amount,
        rows=candidates,
        pools=tuple(p for p in pools if any(p.gpu == r.gpu for r in candidates)),
        capacity={row.target_id: row.capacity(demand) for row in candidates},
        budget_usd_per_hour=demand.budget_usd_per_hour,
        max_targets=demand.max_targets,
    )


def demand_of(config: DemandConfig, catalog_criteria: Slo) -> Demand:
    """The `demand:` block as the planner's input (the catalog's criteria unless it states an SLO)."""
    capacity_types: tuple[CapacityType, ...] = tuple(dict.fromkeys(config.capacityTypes))
    return Demand(
        slo=Slo(config.slo.minTokensPerSecondPerUser, config.slo.maxTtftP50Ms) if config.slo else catalog_criteria,
        concurrent_users=config.concurrentUsers,
        requests_per_second=config.requestsPerSecond,
        token_shape=TokenShape(config.tokenShape.inputTokens, config.tokenShape.outputTokens)
        if config.tokenShape
        else None,
        budget_usd_per_hour=config.budgetUsdPerHour,
        gpu_types=tuple(config.gpuTypes) if config.gpuTypes else None,
        capacity_types=capacity_types,
        max_targets=config.maxTargets,
    )
