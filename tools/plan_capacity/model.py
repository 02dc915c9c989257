"""The capacity planner's vocabulary: demand, the search space, and the catalog's rows and offers it is solved on.

Demand is a number of *serving slots*: concurrent users (each keeps one request in flight) or a request rate,
converted per target with Little's law, L = lambda * W, where W is how long one request holds a slot there:

    W_t = ttftP50Ms_t / 1000 + outputTokens / tokensPerSecondPerUser_t

so a replica set measured at concurrency C_t serves C_t / W_t requests/s. Input tokens do not enter W beyond the
measured TTFT (which holds the benchmark's prefill); a token shape far from the benchmark's makes every figure an
estimate, and the plan says so. The rows and offers are the product's (`serving_stack.plan.throughput`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from serving_stack.config.demand import DemandConfig, SloConfig
from serving_stack.facts.aws import AwsCatalog, unknown_gpu_problem
from serving_stack.facts.catalog import Catalog
from serving_stack.plan.throughput import (
    CandidateRow,
    CapacityType,
    InstanceOffer,
    Slo,
    TokenCost,
    TokenCostRow,
    candidate_row,
)


def amount(demand: DemandConfig) -> float:
    """Users, or requests/s: the unit every capacity figure of a plan is in."""
    return float(demand.concurrentUsers or demand.requestsPerSecond or 0)


def unit(demand: DemandConfig) -> str:
    return "users" if demand.requestsPerSecond is None else "req/s"


def slo(demand: DemandConfig) -> Slo:
    """The SLO of a demand `demand_of` resolved."""
    assert demand.slo is not None
    return Slo(demand.slo.minTokensPerSecondPerUser, demand.slo.maxTtftP50Ms)


def seconds_per_request(row: CandidateRow, output_tokens: int) -> float:
    """Little's-law W: how long one request holds one of the replica set's slots."""
    assert row.ttft_p50_ms is not None
    assert row.tokens_per_second_per_user is not None
    return row.ttft_p50_ms / 1000.0 + output_tokens / row.tokens_per_second_per_user


def row_capacity(row: CandidateRow, demand: DemandConfig) -> float:
    """What one replica set serves, in the demand's unit (users, or requests/s)."""
    assert row.concurrency is not None
    if demand.tokenShape is not None and demand.requestsPerSecond is not None:
        return row.concurrency / seconds_per_request(row, demand.tokenShape.outputTokens)
    return float(row.concurrency)


@dataclass(frozen=True, order=True)
class Pool:
    """A node group the plan may create: one instance type bought one way."""

    instance_type: str
    capacity_type: str
    gpu: str
    gpus_per_node: int
    usd_per_node_hour: float

    def holds(self, row: CandidateRow) -> bool:
        """Its nodes have the row's GPU, in a count its worker pods divide."""
        return self.gpu == row.gpu and self.gpus_per_node % row.gpus_per_worker_pod == 0


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
        return [p for p in self.pools if p.holds(row)]

    def max_replica_sets(self, row: CandidateRow) -> int:
        return max(1, math.ceil(self.demand / self.capacity[row.target_id] - 1e-9))


def pools_for(
    offers: tuple[InstanceOffer, ...], gpu_types: Optional[list[str]], capacity_types: list[CapacityType]
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


def search_space(
    demand: DemandConfig, rows: tuple[CandidateRow, ...], offers: tuple[InstanceOffer, ...]
) -> SearchSpace:
    """The rows that may serve this demand (published, SLO met, allowed GPU type, some priced pool)."""
    pools = pools_for(offers, demand.gpuTypes, demand.capacityTypes)
    candidates = tuple(r for r in rows if r.published and r.meets(slo(demand)) and any(p.holds(r) for p in pools))
    return SearchSpace(
        demand=amount(demand),
        rows=candidates,
        pools=tuple(p for p in pools if any(p.gpu == r.gpu for r in candidates)),
        capacity={row.target_id: row_capacity(row, demand) for row in candidates},
        budget_usd_per_hour=demand.budgetUsdPerHour,
        max_targets=demand.maxTargets,
    )


def demand_of(config: DemandConfig, catalog_criteria: Slo) -> DemandConfig:
    """The `demand:` block as the planner's input: its SLO set (the catalog's criteria unless it states one),
    its capacity types each once."""
    criteria = SloConfig.model_construct(  # checked where the catalog loads, not as the user's input
        minTokensPerSecondPerUser=catalog_criteria.min_tokens_per_second_per_user,
        maxTtftP50Ms=catalog_criteria.max_ttft_p50_ms,
    )
    return config.model_copy(
        update={"slo": config.slo or criteria, "capacityTypes": list(dict.fromkeys(config.capacityTypes))}
    )


def candidate_rows(catalog: Catalog, aws_catalog: AwsCatalog) -> tuple[CandidateRow, ...]:
    """A row per target the planner may place: not one on a GPU catalog/gpus.yaml does not hold yet (an
    absorbed target: `unplaceable_targets` lists it)."""
    return tuple(
        candidate_row(recipe, aws_catalog)
        for recipe in catalog.recipes.values()
        if aws_catalog.gpu_of_product(recipe.gpu_products[0]) is not None
    )


def unplaceable_targets(catalog: Catalog, aws_catalog: AwsCatalog) -> tuple[str, ...]:
    """One line per target left out of the rows, with what to add."""
    return tuple(
        f"{recipe.id}: {unknown_gpu_problem(recipe.gpu_products[0])}"
        for recipe in catalog.recipes.values()
        if aws_catalog.gpu_of_product(recipe.gpu_products[0]) is None
    )


def benchmark_token_shape(catalog: Catalog) -> Optional[tuple[int, int]]:
    """(input, output) tokens per request of the catalog's benchmark, read from its workload line
    (e.g. "64K input / 400 output tokens"; K = 1000); None when the line does not say."""
    match = re.search(r"(\d+)(K?) input / (\d+) output", catalog.data.benchmark.workload)
    if not match:
        return None
    return int(match.group(1)) * (1000 if match.group(2) else 1), int(match.group(3))


def token_cost_cell(cost: Optional[TokenCost]) -> str:
    """`$0.123 (p5.48xlarge)`: a cost per 1M output tokens and where."""
    return f"${cost.usd_per_million:.3f} ({cost.instance_type})" if cost else "n/a"


def token_cost_markdown(table: list[TokenCostRow]) -> str:
    """The rows as a markdown table, cheapest on-demand first (n/a last)."""
    ordered = sorted(
        table,
        key=lambda r: (
            r.by_capacity_type["on-demand"] is None,
            r.by_capacity_type["on-demand"].usd_per_million if r.by_capacity_type["on-demand"] else 0,
            r.target_id,
        ),
    )
    lines = [
        "| target | GPU | GPUs / replica set | output tok/s / replica set | $/1M output tokens, on-demand | "
        "$/1M, capacity block | $/1M, spot | meets criteria | acceptance basis |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in ordered:
        throughput = f"{r.output_tokens_per_second:,.0f}" if r.output_tokens_per_second is not None else "n/a"
        meets = {True: "yes", False: "no", None: "n/a"}[r.meets_criteria]
        lines.append(
            f"| `{r.target_id}` | {r.gpu} | {r.gpus_per_replica_set} | {throughput} | "
            f"{token_cost_cell(r.by_capacity_type['on-demand'])} | {token_cost_cell(r.by_capacity_type['capacity-block'])} | "
            f"{token_cost_cell(r.by_capacity_type['spot'])} | {meets} | {r.basis} |"
        )
    return "\n".join(lines)
