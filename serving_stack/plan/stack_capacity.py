"""Capacity of the planned stack, resolved once in `build_plan` after the serving targets: what 1M output
tokens cost on each Dynamo target where it runs (into the outputs contract and `summary.md`), how long a
new GPU node takes to serve on each pool, and the autoscaling of
`serving_stack.plan.stack_scaling`.

The price of a target is its pool's: the instance type bought the pool's way (an ODCR at the on-demand
rate, a Capacity Block at its recorded rate, Spot unpriced). A target on nodes the stack knows nothing
about (an existing cluster without pools) is priced on the cheapest on-demand instance type of its GPU.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional

from serving_stack.config.stack import StackConfig
from serving_stack.facts import Facts
from serving_stack.plan.capacity_inputs import candidate_row, instance_offers
from serving_stack.plan.capacity_model import CandidateRow, InstanceOffer, Slo
from serving_stack.plan.node_ready import NodeReadyPrediction, fsx_read_mb_s, node_ready_facts, predict_node_ready
from serving_stack.plan.pools import ResolvedPool
from serving_stack.plan.quantities import gib
from serving_stack.plan.serving import PlannedTarget
from serving_stack.plan.stack_scaling import AutoscalingPlan, ClusterScalingPlan, ServingScalingPlan, plan_autoscaling
from serving_stack.plan.token_cost import TokenCostRow, token_cost_rows, usd_per_million_output_tokens

# Which price of an instance type a pool pays, by its capacity type.
PRICE_OF_CAPACITY_TYPE = MappingProxyType(
    {
        "on-demand": "on-demand",
        "odcr": "on-demand",
        "spot": "spot",
        "capacity-block": "capacity-block",
    }
)


@dataclass(frozen=True)
class TargetTokenCost:
    """$/1M output tokens where the target runs (`runs_on` says where and how bought), and the cheapest
    instance type of its GPU per capacity type for comparison."""

    target_id: str
    runs_on: str
    usd_per_million: Optional[float]
    cheapest: TokenCostRow


@dataclass(frozen=True)
class NodeReadiness:
    """Per pool: one new node, and the pool's whole growth at once (they share the file system)."""

    predictions: tuple[NodeReadyPrediction, ...]
    file_system: str  # what prewarm reads from, as the predictions assume


@dataclass(frozen=True)
class StackCapacity:
    token_costs: tuple[TargetTokenCost, ...]
    node_readiness: NodeReadiness
    autoscaling: Optional[AutoscalingPlan]

    @property
    def serving_scaling(self) -> Optional[ServingScalingPlan]:
        return self.autoscaling.serving if self.autoscaling else None

    @property
    def cluster_scaling(self) -> Optional[ClusterScalingPlan]:
        return self.autoscaling.cluster if self.autoscaling else None


def target_token_cost(
    target_id: str, row: CandidateRow, pool: Optional[ResolvedPool], offers: tuple[InstanceOffer, ...], criteria: Slo
) -> TargetTokenCost:
    (cheapest,) = token_cost_rows((row,), offers, criteria)
    if pool is None:
        on_demand = cheapest.by_capacity_type["on-demand"]
        where = (
            f"cheapest on-demand {row.gpu} type: {on_demand.instance_type}"
            if on_demand
            else f"no priced on-demand {row.gpu} type"
        )
        return TargetTokenCost(target_id, where, on_demand.usd_per_million if on_demand else None, cheapest)
    offer = next((o for o in offers if o.instance_type == pool.instance_type), None)
    price = PRICE_OF_CAPACITY_TYPE[pool.capacity_type]
    cost = usd_per_million_output_tokens(row, offer, price) if offer else None
    where = f"pool {pool.name}: {pool.instance_type or 'nodes of no EC2 type'} ({pool.capacity_type})"
    return TargetTokenCost(target_id, where, cost, cheapest)


def _file_system(config: StackConfig, facts: Facts) -> tuple[float, str]:
    """MB/s the model cache serves to every node warming at once, and what that figure rests on."""
    storage = config.aws.modelCacheStorage if config.aws else None
    size = gib(config.modelCache.size) if config.modelCache.size else None
    if storage is not None and storage.backend == "fsx" and size is not None:
        per_tib = storage.fsx.perUnitStorageThroughput
        total = fsx_read_mb_s(per_tib, size)
        return total, (
            f"FSx for Lustre, {per_tib} MB/s/TiB x {size:g} GiB = {total:,.0f} MB/s shared by the nodes "
            "that start together"
        )
    efs = facts.node_ready.fileSystemReadMBps.efs.value
    if storage is not None and storage.backend == "efs" and efs is not None:
        return efs, f"EFS elastic throughput, {efs:,.0f} MB/s read per file system"
    return math.inf, (
        f"storage class {config.modelCache.storageClassName} is not the stack's: its throughput is "
        "unknown, so only the per-node read cap limits prewarm"
    )


def _node_readiness(
    config: StackConfig, facts: Facts, pools: Sequence[ResolvedPool], cluster_scaling: Optional[ClusterScalingPlan]
) -> NodeReadiness:
    phases = node_ready_facts(facts.node_ready)
    file_system_mb_s, file_system = _file_system(config, facts)
    prewarm = config.modelCache.prewarm
    gated = prewarm.enabled and prewarm.gateWorkers
    predictions = []
    for pool in pools:
        autoscaled = cluster_scaling is not None and pool.name in cluster_scaling.pool_tags
        predictions.append(predict_node_ready(pool.name, phases, file_system_mb_s, 1, gated, autoscaled))
        growth = pool.max_size - pool.min_size
        if growth > 1:
            predictions.append(
                predict_node_ready(
                    f"{pool.name}, {growth} nodes at once", phases, file_system_mb_s, growth, gated, autoscaled
                )
            )
    return NodeReadiness(tuple(predictions), file_system)


def plan_stack_capacity(
    config: StackConfig,
    facts: Facts,
    targets: Sequence[PlannedTarget],
    pools: Sequence[ResolvedPool],
    prometheus_url: Optional[str],
) -> tuple[tuple[PlannedTarget, ...], StackCapacity]:
    """The targets as deployed (scaling adapters, $/1M in their endpoints) and the stack's capacity facts.
    `prometheus_url`: the stack's own Prometheus, if it runs one (the autoscalers' default)."""
    criteria = Slo(facts.catalog.criteria.minTokensPerSecondPerUser, facts.catalog.criteria.maxTtftP50Ms)
    slo = config.demand.slo if config.demand and config.demand.slo else None
    max_ttft_p50_ms = slo.maxTtftP50Ms if slo else criteria.max_ttft_p50_ms
    scaled, autoscaling = plan_autoscaling(config, facts, targets, pools, prometheus_url, max_ttft_p50_ms)
    offers = instance_offers(facts.aws, facts.capacity_prices)
    costs, deployed = [], []
    for target in scaled:
        recipe = target.selected.recipe
        if facts.aws.gpu_of_product(recipe.gpu_products[0]) is None:  # a GPU no data file prices: cost unknown
            deployed.append(target)
            continue
        cost = target_token_cost(target.selected.id, candidate_row(recipe, facts.aws), target.pool, offers, criteria)
        costs.append(cost)
        usd = round(cost.usd_per_million, 4) if cost.usd_per_million is not None else None
        deployed.append(
            dataclasses.replace(target, endpoint=target.endpoint.model_copy(update={"usdPerMillionOutputTokens": usd}))
        )
    readiness = _node_readiness(config, facts, pools, autoscaling.cluster if autoscaling else None)
    return tuple(deployed), StackCapacity(tuple(costs), readiness, autoscaling)
