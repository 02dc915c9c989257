"""Seeded demands for the capacity tests, drawn from the catalog's own figures (SLO thresholds at
published tok/s/user and TTFT values, demand sizes in multiples of published concurrencies, budgets
in multiples of published node prices), so they move with the data."""

from __future__ import annotations

import datetime
import random
from collections.abc import Iterator

from serving_stack.config.demand import DemandConfig, SloConfig, TokenShapeConfig
from serving_stack.facts.aws import load_aws_catalog, load_capacity_prices
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.throughput import CandidateRow, CapacityType, InstanceOffer, Slo, instance_offers
from tools.plan_capacity.model import candidate_rows

CATALOG = load_catalog()
ROWS: tuple[CandidateRow, ...] = candidate_rows(CATALOG, load_aws_catalog())
PRICES = load_capacity_prices()
# The solver is exercised on every price the file holds: the day before the first of them ends (after it an
# ended price prices nothing: tests/test_dated_facts.py).
PRICED_DAY = min(p.reviewBy for p in PRICES.capacityBlock.values()) - datetime.timedelta(days=1)
OFFERS: tuple[InstanceOffer, ...] = instance_offers(load_aws_catalog(), PRICES, PRICED_DAY)
CRITERIA = Slo(CATALOG.criteria.minTokensPerSecondPerUser, CATALOG.criteria.maxTtftP50Ms)
CAPACITY_CHOICES: list[list[CapacityType]] = [
    ["on-demand"],
    ["on-demand", "capacity-block"],
    ["on-demand", "capacity-block"],
    ["capacity-block"],
]
# Enumeration grows fast with demand: this keeps the brute force of one demand well under a second.
MAX_USERS = 200


def generated_demands(count: int, seed: int) -> Iterator[DemandConfig]:
    rng = random.Random(seed)
    published = [r for r in ROWS if r.published]
    gpus = sorted({r.gpu for r in published})
    speeds = sorted({r.tokens_per_second_per_user for r in published if r.tokens_per_second_per_user})
    ttfts = sorted({r.ttft_p50_ms for r in published if r.ttft_p50_ms})
    concurrencies = sorted({r.concurrency for r in published if r.concurrency})
    prices = sorted({p for o in OFFERS for p in o.usd_per_hour.values() if p is not None})
    for _ in range(count):
        slo = SloConfig(
            minTokensPerSecondPerUser=rng.choice([CRITERIA.min_tokens_per_second_per_user, *speeds]),
            maxTtftP50Ms=rng.choice([CRITERIA.max_ttft_p50_ms, *ttfts]),
        )
        size = min(MAX_USERS, rng.choice(concurrencies) * rng.choice([0.5, 1, 1.5, 2, 3, 5, 8]))
        common = {
            "slo": slo,
            "gpuTypes": rng.choice([None, sorted(rng.sample(gpus, rng.randint(1, len(gpus))))]),
            "capacityTypes": rng.choice(CAPACITY_CHOICES),
            "budgetUsdPerHour": rng.choice([None, None, rng.choice(prices) * rng.randint(1, 6)]),
            "maxTargets": rng.choice([None, None, 1, 2]),
        }
        if rng.random() < 0.25:
            shape = TokenShapeConfig(inputTokens=64_000, outputTokens=rng.choice([200, 400, 800]))
            yield DemandConfig(requestsPerSecond=round(size / 5, 2), tokenShape=shape, **common)  # type: ignore[arg-type]
        else:
            yield DemandConfig(concurrentUsers=max(1, round(size)), **common)  # type: ignore[arg-type]
