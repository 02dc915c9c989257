"""A target's throughput figures, what they rest on, and what a million output tokens cost where it runs.

    $/1M = (node $/h x GPUs per replica set / GPUs per node) / (output tok/s per GPU x GPUs per replica set x 3600) x 1e6

at the published throughput, every replica set busy the whole hour: a floor (idle capacity costs the same per hour
and produces nothing). A pool pays its instance type's price the pool's way (an ODCR at the on-demand rate, a
Capacity Block at its recorded rate, Spot unpriced); a target on nodes the stack knows nothing about is priced on
the cheapest on-demand instance type of its GPU. The capacity planner (tools/plan_capacity) reads the same rows.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Optional

from serving_stack.config.serving import TargetConfig
from serving_stack.errors import ConfigError
from serving_stack.facts.aws import AwsCatalog, CapacityPricesFile
from serving_stack.facts.catalog import Recipe
from serving_stack.plan.pools import ResolvedPool

CapacityType = Literal["on-demand", "spot", "capacity-block"]  # the priced ones; an ODCR pays the on-demand rate
CAPACITY_TYPES: tuple[CapacityType, ...] = ("on-demand", "spot", "capacity-block")
SECONDS_PER_HOUR, TOKENS_PER_MILLION = 3600, 1_000_000


@dataclass(frozen=True)
class ThroughputBasis:
    """What a target's expected tok/s, tok/s/user and $/1M rest on. The published row was measured with
    `synthetic` acceptance (a fixed acceptance length; None: without speculative decoding, or unsaid); the
    figures are scaled to `acceptance` (`targets[i].acceptanceLength`, `key`) over it, or shown as published."""

    speculative: bool
    synthetic: Optional[float]
    acceptance: Optional[float] = None
    key: str = "targets[].acceptanceLength"

    @property
    def factor(self) -> float:
        return self.acceptance / self.synthetic if self.acceptance and self.synthetic else 1.0

    def scaled(self, figure: Optional[float]) -> Optional[float]:
        return figure if figure is None or self.factor == 1 else round(figure * self.factor, 2)

    def describe(self) -> str:
        if not self.speculative:
            return "measured without speculative decoding"
        if self.synthetic is None:
            return "speculative decoding; the acceptance of the measurement is unpublished"
        if self.acceptance is None:
            return f"synthetic acceptance length {self.synthetic:g}, not measured on real traffic (set {self.key})"
        scaled = f"scaled x{self.factor:.3f} to acceptance length {self.acceptance:g} ({self.key})"
        return f"{scaled} from the synthetic {self.synthetic:g}"


def throughput_basis(recipe: Recipe, config: TargetConfig, index: int) -> ThroughputBasis:
    """The basis of one target's figures; `ConfigError` when the configured acceptance length cannot be."""
    key = f"targets[{index}].acceptanceLength"
    draft_tokens, acceptance = recipe.draft_tokens, config.acceptanceLength
    if acceptance is not None and (draft_tokens is None or acceptance > draft_tokens + 1):
        runs = "runs no speculative decoding" if draft_tokens is None else f"drafts {draft_tokens} tokens a step"
        allowed = "unset" if draft_tokens is None else f"1..{draft_tokens + 1}"
        raise ConfigError(key, f"{acceptance:g} for {recipe.id!r}, which {runs}", allowed)
    synthetic = recipe.entry.performance.syntheticAcceptanceLength
    return ThroughputBasis(draft_tokens is not None, synthetic, acceptance, key)


@dataclass(frozen=True)
class Slo:
    min_tokens_per_second_per_user: float
    max_ttft_p50_ms: float


@dataclass(frozen=True)
class CandidateRow:
    """One catalog target's *replica set*, the recipe's measured unit: its worker replicas as published (e.g. 4
    workers for a KV-router target, 1 prefill + 1 decode for a disaggregated one), measured at `concurrency`.
    Performance fields are None when unpublished."""

    target_id: str
    gpu: str
    gpus_per_replica_set: int
    gpus_per_worker_pod: int
    worker_replicas: Mapping[str, int]
    concurrency: Optional[int]
    tokens_per_second_per_user: Optional[float]
    ttft_p50_ms: Optional[float]
    output_tokens_per_second_per_gpu: Optional[float]
    basis: str  # what the throughput figures rest on (`ThroughputBasis.describe`)

    @property
    def published(self) -> bool:
        figures = (self.concurrency, self.tokens_per_second_per_user, self.ttft_p50_ms)
        return None not in (*figures, self.output_tokens_per_second_per_gpu)

    def meets(self, slo: Slo) -> bool:
        assert self.tokens_per_second_per_user is not None
        assert self.ttft_p50_ms is not None
        return self.tokens_per_second_per_user >= slo.min_tokens_per_second_per_user and (
            self.ttft_p50_ms <= slo.max_ttft_p50_ms
        )


def candidate_row(recipe: Recipe, aws_catalog: AwsCatalog, basis: Optional[ThroughputBasis] = None) -> CandidateRow:
    """The recipe's replica set as published, its throughput scaled by a selected target's `basis` (else as
    published, at its synthetic acceptance)."""
    gpu = aws_catalog.gpu_of_product(recipe.gpu_products[0])
    if gpu is None:
        why = f"no GPU in gpus.yaml has product label {recipe.gpu_products[0]!r}"
        raise ConfigError(f"catalog/targets.yaml: {recipe.id}", why)
    workers, performance = recipe.worker_components(), recipe.entry.performance
    basis = basis or ThroughputBasis(recipe.draft_tokens is not None, performance.syntheticAcceptanceLength)
    return CandidateRow(
        target_id=recipe.id,
        gpu=gpu,
        gpus_per_replica_set=recipe.gpus_per_replica_set,
        gpus_per_worker_pod=max(recipe.gpus_per_replica(c) for c in workers),
        worker_replicas=recipe.worker_replicas,
        concurrency=performance.concurrency,
        tokens_per_second_per_user=basis.scaled(performance.tokensPerSecondPerUser),
        ttft_p50_ms=performance.ttftP50Ms,
        output_tokens_per_second_per_gpu=basis.scaled(performance.outputTokensPerSecondPerGpu),
        basis=basis.describe(),
    )


@dataclass(frozen=True)
class InstanceOffer:
    """An EC2 instance type with its $/h per node for each capacity type (None: no sourced price)."""

    instance_type: str
    gpu: str
    gpus_per_node: int
    usd_per_hour: Mapping[str, Optional[float]] = field(default_factory=dict)


def instance_offers(
    aws_catalog: AwsCatalog, prices: CapacityPricesFile, today: datetime.date
) -> tuple[InstanceOffer, ...]:
    """Every instance type's prices on `today`: a capacity-block price past its `reviewBy` is left out (None)."""
    blocks = prices.current_capacity_blocks(today)
    unknown = sorted(set(prices.capacityBlock) - set(aws_catalog.instance_types))
    if unknown:
        known = ", ".join(aws_catalog.instance_types)
        raise ConfigError("catalog/capacity_prices.yaml: capacityBlock", f"unknown instance type(s) {unknown}", known)
    return tuple(
        InstanceOffer(
            name,
            instance.gpu,
            instance.gpus,
            {
                "on-demand": instance.onDemandUsdPerHour if "on-demand" in instance.capacityTypes else None,
                "spot": None,
                "capacity-block": block.usdPerHour if (block := blocks.get(name)) else None,
            },
        )
        for name, instance in sorted(aws_catalog.instance_types.items())
    )


def usd_per_million_output_tokens(row: CandidateRow, offer: InstanceOffer, capacity_type: str) -> Optional[float]:
    price = offer.usd_per_hour.get(capacity_type)
    if price is None or row.output_tokens_per_second_per_gpu is None or offer.gpu != row.gpu:
        return None
    share_usd_per_hour = price * row.gpus_per_replica_set / offer.gpus_per_node
    tokens_per_hour = row.output_tokens_per_second_per_gpu * row.gpus_per_replica_set * SECONDS_PER_HOUR
    return share_usd_per_hour / tokens_per_hour * TOKENS_PER_MILLION


@dataclass(frozen=True)
class TokenCost:
    usd_per_million: float
    instance_type: str


@dataclass(frozen=True)
class TokenCostRow:
    """A row's $/1M on the cheapest instance type of its GPU, per capacity type."""

    target_id: str
    gpu: str
    gpus_per_replica_set: int
    output_tokens_per_second: Optional[float]  # of one replica set
    meets_criteria: Optional[bool]
    by_capacity_type: Mapping[str, Optional[TokenCost]]
    basis: str  # what the output tok/s rests on (`CandidateRow.basis`)


def token_cost_row(row: CandidateRow, offers: tuple[InstanceOffer, ...], criteria: Slo) -> TokenCostRow:
    by_type: dict[str, Optional[TokenCost]] = {}
    for capacity_type in CAPACITY_TYPES:
        costs = [
            (cost, offer.instance_type)
            for offer in offers
            if (cost := usd_per_million_output_tokens(row, offer, capacity_type)) is not None
        ]
        by_type[capacity_type] = TokenCost(*min(costs)) if costs else None
    per_gpu = row.output_tokens_per_second_per_gpu
    return TokenCostRow(
        target_id=row.target_id,
        gpu=row.gpu,
        gpus_per_replica_set=row.gpus_per_replica_set,
        output_tokens_per_second=per_gpu * row.gpus_per_replica_set if per_gpu is not None else None,
        meets_criteria=row.meets(criteria) if row.published else None,
        by_capacity_type=by_type,
        basis=row.basis,
    )


@dataclass(frozen=True)
class TargetTokenCost:
    """$/1M output tokens where the target runs (`runs_on` says where and how bought), and the cheapest
    instance type of its GPU per capacity type for comparison."""

    target_id: str
    runs_on: str
    usd_per_million: Optional[float]
    cheapest: TokenCostRow


def target_token_cost(
    row: CandidateRow, pool: Optional[ResolvedPool], offers: tuple[InstanceOffer, ...], criteria: Slo
) -> TargetTokenCost:
    """Priced on its pool (None: on the cheapest on-demand type of its GPU)."""
    cheapest = token_cost_row(row, offers, criteria)
    if pool is None:
        on_demand = cheapest.by_capacity_type["on-demand"]
        if on_demand is None:
            return TargetTokenCost(row.target_id, f"no priced on-demand {row.gpu} type", None, cheapest)
        where = f"cheapest on-demand {row.gpu} type: {on_demand.instance_type}"
        return TargetTokenCost(row.target_id, where, on_demand.usd_per_million, cheapest)
    offer = next((o for o in offers if o.instance_type == pool.instance_type), None)
    capacity_type = "on-demand" if pool.capacity_type == "odcr" else pool.capacity_type
    cost = usd_per_million_output_tokens(row, offer, capacity_type) if offer else None
    where = f"pool {pool.name}: {pool.instance_type or 'nodes of no EC2 type'} ({pool.capacity_type})"
    return TargetTokenCost(row.target_id, where, cost, cheapest)
