"""The planner's inputs from the facts: a candidate row per catalog target (GPUs, published figures) and the
priced offers of every GPU instance type (on-demand, and Capacity Blocks where a price is recorded)."""

from __future__ import annotations

import re
from typing import Optional

from serving_stack.errors import ConfigError
from serving_stack.facts.capacity_facts import CapacityPricesFile, load_capacity_prices
from serving_stack.facts.catalog import Catalog, Recipe
from serving_stack.facts.instance_types import AwsCatalog
from serving_stack.plan.capacity_model import CandidateRow, InstanceOffer


def candidate_row(recipe: Recipe, aws_catalog: AwsCatalog) -> CandidateRow:
    """The recipe's replica set as published: its worker components at their upstream replica counts."""
    gpu = aws_catalog.gpu_of_product(recipe.gpu_products[0])
    if gpu is None:
        raise ConfigError(
            f"catalog/targets.yaml: {recipe.id}", f"no GPU in gpus.yaml has product label {recipe.gpu_products[0]!r}"
        )
    workers = recipe.worker_components()
    performance = recipe.entry.performance
    return CandidateRow(
        target_id=recipe.id,
        gpu=gpu,
        gpus_per_replica_set=sum(c["replicas"] * recipe.gpus_per_replica(c) for c in workers),
        gpus_per_worker_pod=max(recipe.gpus_per_replica(c) for c in workers),
        worker_replicas={c["name"]: c["replicas"] for c in workers},
        concurrency=performance.concurrency,
        tokens_per_second_per_user=performance.tokensPerSecondPerUser,
        ttft_p50_ms=performance.ttftP50Ms,
        output_tokens_per_second_per_gpu=performance.outputTokensPerSecondPerGpu,
    )


def candidate_rows(catalog: Catalog, aws_catalog: AwsCatalog) -> tuple[CandidateRow, ...]:
    return tuple(candidate_row(recipe, aws_catalog) for recipe in catalog.recipes.values())


def instance_offers(aws_catalog: AwsCatalog, prices: Optional[CapacityPricesFile] = None) -> tuple[InstanceOffer, ...]:
    prices = prices or load_capacity_prices()
    unknown = sorted(set(prices.capacityBlock) - set(aws_catalog.instance_types))
    if unknown:
        raise ConfigError(
            "catalog/capacity_prices.yaml: capacityBlock",
            f"unknown instance type(s) {unknown}",
            ", ".join(aws_catalog.instance_types),
        )
    offers = []
    for name, instance in sorted(aws_catalog.instance_types.items()):
        block = prices.capacityBlock.get(name)
        offers.append(
            InstanceOffer(
                instance_type=name,
                gpu=instance.gpu,
                gpus_per_node=instance.gpus,
                usd_per_hour={
                    "on-demand": instance.onDemandUsdPerHour if "on-demand" in instance.capacityTypes else None,
                    "spot": None,
                    "capacity-block": block.usdPerHour if block else None,
                },
            )
        )
    return tuple(offers)


def benchmark_token_shape(catalog: Catalog) -> Optional[tuple[int, int]]:
    """(input, output) tokens per request of the catalog's benchmark, read from its workload line
    (e.g. "64K input / 400 output tokens"; K = 1000); None when the line does not say."""
    match = re.search(r"(\d+)(K?) input / (\d+) output", catalog.data.benchmark.workload)
    if not match:
        return None
    return int(match.group(1)) * (1000 if match.group(2) else 1), int(match.group(3))
