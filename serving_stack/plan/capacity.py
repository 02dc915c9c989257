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

The planner's inputs from the facts: a candidate row per catalog target (GPUs, published figures) and the
priced offers of every GPU instance type (on-demand, and Capacity Blocks where a price is recorded).

What a million output tokens costs on each target: the replica set's share of its node's price per
hour over the tokens it produces per hour at the published throughput.

    $/1M = (node $/h x GPUs per replica set / GPUs per node) / (output tok/s per GPU x GPUs per replica set x 3600) x 1e6

It assumes the replica set runs at its published concurrency the whole hour (a floor on the real
price: idle capacity and headroom cost the same per hour and produce nothing). For each capacity type
the cheapest instance type of the target's GPU is used; a capacity type without a sourced price is n/a.

Scaling with load, as plain data: a KEDA ScaledObject per autoscaled DGD worker component, the DGD
change that makes the operator create the component's scaling adapter, and the replica paths Pulumi must
stop owning (cluster-autoscaler's node-group tags, IAM policy and values: `cluster_autoscaler`).

Why KEDA and not HPA + Prometheus Adapter: the query lives in the ScaledObject next to its target (no
adapter rule file shared by every target), KEDA can scale a component to zero, and it is the Dynamo
docs' recommended path. KEDA still drives an HPA underneath, so HPA `behavior` applies.

A component scales on the most demanding of three triggers (KEDA takes the maximum):
- in-flight requests per replica against the concurrency the catalog measured per worker: the planner's
  capacity model ("a replica serves at most its measured concurrency");
- queue depth per replica (requests waiting in the frontend);
- TTFT p50 against the SLO (a Value metric: replicas grow in proportion to the overshoot).

cluster-autoscaler, as plain data: the tags a GPU node group's Auto Scaling group carries for
auto-discovery and scale-up from zero, the IAM policy the autoscaler runs with, and its chart values.

The `autoscaling:` block applied to the planned stack: which DGD components KEDA scales (their scaling
adapters enabled, their replicas left to the adapters), the ScaledObjects that do it, and cluster-autoscaler
with the tags of each GPU node group, on a cluster the stack creates.

The objects themselves are built by `serving_stack.plan.capacity` and
`serving_stack.plan.capacity`; this module decides where they apply and checks, before any
resource, what would make them useless: a target the stack does not select, no Prometheus to read, bounds
the target's pool cannot hold, a cluster-autoscaler image for another Kubernetes minor than the cluster's.

Capacity of the planned stack, resolved once in `build_plan` after the serving targets: what 1M output
tokens cost on each Dynamo target where it runs (into the outputs contract and `summary.md`) and the
autoscaling of `serving_stack.plan.capacity`. How long a new GPU node takes to serve is the timing model's
(tools/rollout/cold_start.py, from the render and catalog/durations.yaml), not the product's.

The price of a target is its pool's: the instance type bought the pool's way (an ODCR at the on-demand
rate, a Capacity Block at its recorded rate, Spot unpriced). A target on nodes the stack knows nothing
about (an existing cluster without pools) is priced on the cheapest on-demand instance type of its GPU.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Literal, Optional

from serving_stack.config.autoscaling import AutoscalingConfig
from serving_stack.config.demand import DemandConfig
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError
from serving_stack.facts import Facts
from serving_stack.facts.aws import (
    ADAPTER_API_VERSION,
    ADAPTER_KIND,
    AwsCatalog,
    CapacityPricesFile,
    HelmPin,
    MetricQueries,
    load_capacity_prices,
)
from serving_stack.facts.catalog import Catalog, Recipe
from serving_stack.names import GPU_PRODUCT_LABEL, GPU_TAINT
from serving_stack.plan.pools import ResolvedPool
from serving_stack.plan.serving import PlannedTarget, ThroughputBasis

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
    basis: str  # what the throughput figures rest on (`ThroughputBasis.describe`)

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


def candidate_row(recipe: Recipe, aws_catalog: AwsCatalog, basis: Optional[ThroughputBasis] = None) -> CandidateRow:
    """The recipe's replica set as published: its worker components at their upstream replica counts, its
    throughput scaled by a selected target's `basis` (else as published, at its synthetic acceptance)."""
    gpu = aws_catalog.gpu_of_product(recipe.gpu_products[0])
    if gpu is None:
        raise ConfigError(
            f"catalog/targets.yaml: {recipe.id}", f"no GPU in gpus.yaml has product label {recipe.gpu_products[0]!r}"
        )
    workers = recipe.worker_components()
    performance = recipe.entry.performance
    basis = basis or ThroughputBasis(recipe.draft_tokens is not None, performance.syntheticAcceptanceLength)
    return CandidateRow(
        target_id=recipe.id,
        gpu=gpu,
        gpus_per_replica_set=sum(c["replicas"] * recipe.gpus_per_replica(c) for c in workers),
        gpus_per_worker_pod=max(recipe.gpus_per_replica(c) for c in workers),
        worker_replicas={c["name"]: c["replicas"] for c in workers},
        concurrency=performance.concurrency,
        tokens_per_second_per_user=basis.scaled(performance.tokensPerSecondPerUser),
        ttft_p50_ms=performance.ttftP50Ms,
        output_tokens_per_second_per_gpu=basis.scaled(performance.outputTokensPerSecondPerGpu),
        basis=basis.describe(),
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


SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 1_000_000


@dataclass(frozen=True)
class TokenCost:
    usd_per_million: float
    instance_type: str


@dataclass(frozen=True)
class TokenCostRow:
    target_id: str
    gpu: str
    gpus_per_replica_set: int
    output_tokens_per_second: Optional[float]  # of one replica set
    meets_criteria: Optional[bool]
    by_capacity_type: Mapping[str, Optional[TokenCost]]
    basis: str  # what the output tok/s rests on (`CandidateRow.basis`)


def usd_per_million_output_tokens(row: CandidateRow, offer: InstanceOffer, capacity_type: str) -> Optional[float]:
    price = offer.usd_per_hour.get(capacity_type)
    if price is None or row.output_tokens_per_second_per_gpu is None or offer.gpu != row.gpu:
        return None
    share_usd_per_hour = price * row.gpus_per_replica_set / offer.gpus_per_node
    tokens_per_hour = row.output_tokens_per_second_per_gpu * row.gpus_per_replica_set * SECONDS_PER_HOUR
    return share_usd_per_hour / tokens_per_hour * TOKENS_PER_MILLION


def token_cost_rows(
    rows: tuple[CandidateRow, ...], offers: tuple[InstanceOffer, ...], criteria: Slo
) -> list[TokenCostRow]:
    table = []
    for row in rows:
        by_type: dict[str, Optional[TokenCost]] = {}
        for capacity_type in CAPACITY_TYPES:
            costs = [
                (cost, offer.instance_type)
                for offer in offers
                if (cost := usd_per_million_output_tokens(row, offer, capacity_type)) is not None
            ]
            by_type[capacity_type] = TokenCost(*min(costs)) if costs else None
        table.append(
            TokenCostRow(
                target_id=row.target_id,
                gpu=row.gpu,
                gpus_per_replica_set=row.gpus_per_replica_set,
                output_tokens_per_second=(
                    row.output_tokens_per_second_per_gpu * row.gpus_per_replica_set
                    if row.output_tokens_per_second_per_gpu is not None
                    else None
                ),
                meets_criteria=meets_slo(row, criteria) if row.published else None,
                by_capacity_type=by_type,
                basis=row.basis,
            )
        )
    return table


def _cell(cost: Optional[TokenCost]) -> str:
    return f"${cost.usd_per_million:.3f} ({cost.instance_type})" if cost else "n/a"


def token_cost_markdown(table: list[TokenCostRow]) -> str:
    """The rows as a `summary.md` table, cheapest on-demand first (n/a last)."""
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
            f"{_cell(r.by_capacity_type['on-demand'])} | {_cell(r.by_capacity_type['capacity-block'])} | "
            f"{_cell(r.by_capacity_type['spot'])} | {meets} | {r.basis} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class ComponentScaling:
    """One DGD worker component under an autoscaler. Replica bounds are in pods of this component."""

    dgd_name: str
    component: str
    min_replicas: int
    max_replicas: int
    concurrency_per_replica: float
    max_ttft_p50_ms: float
    queue_depth_per_replica: int


@dataclass(frozen=True)
class ScalingBehaviour:
    polling_interval_s: int = 15
    cooldown_period_s: int = 300
    scale_down_stabilization_s: int = 600


def keda_number(value: float) -> str:
    """A trigger threshold as KEDA's metadata takes it: a string (every metadata value is one), in plain
    decimal: `4`, `0.5`, never `1e+06` (which `:g` makes of 1000000)."""
    if float(value).is_integer():
        return str(int(value))
    return format(Decimal(repr(float(value))), "f")


def adapter_name(dgd_name: str, component: str) -> str:
    """The operator's name for a component's scaling adapter: `<dgd>-<component, lower case>`."""
    return f"{dgd_name}-{component.lower()}"


def scaled_object(
    scaling: ComponentScaling, namespace: str, prometheus_url: str, queries: MetricQueries, behaviour: ScalingBehaviour
) -> dict[str, Any]:
    q = queries.for_dgd(namespace, scaling.dgd_name)

    def trigger(name: str, query: str, threshold: float, metric_type: str, activation: float) -> dict[str, Any]:
        return {
            "type": "prometheus",
            "name": name,
            "metricType": metric_type,
            "metadata": {
                "serverAddress": prometheus_url,
                "query": query,
                "threshold": keda_number(threshold),
                "activationThreshold": keda_number(activation),
            },
        }

    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": adapter_name(scaling.dgd_name, scaling.component),
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/managed-by": "pulumi",
                "nvidia.com/dynamo-graph-deployment-name": scaling.dgd_name,
            },
        },
        "spec": {
            "scaleTargetRef": {
                "apiVersion": ADAPTER_API_VERSION,
                "kind": ADAPTER_KIND,
                "name": adapter_name(scaling.dgd_name, scaling.component),
            },
            "minReplicaCount": scaling.min_replicas,
            "maxReplicaCount": scaling.max_replicas,
            "pollingInterval": behaviour.polling_interval_s,
            "cooldownPeriod": behaviour.cooldown_period_s,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        "scaleDown": {
                            "stabilizationWindowSeconds": behaviour.scale_down_stabilization_s,
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}],
                        },
                        "scaleUp": {
                            "stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 60}],
                        },
                    }
                }
            },
            "triggers": [
                trigger(
                    "inflight-per-replica", q.inflight_requests, scaling.concurrency_per_replica, "AverageValue", 0
                ),
                trigger("queue-per-replica", q.queue_depth, scaling.queue_depth_per_replica, "AverageValue", 0),
                trigger(
                    "ttft-p50-vs-slo",
                    q.ttft_p50_seconds,
                    scaling.max_ttft_p50_ms / 1000,
                    "Value",
                    scaling.max_ttft_p50_ms / 2000,
                ),
            ],
        },
    }


def enable_scaling_adapters(dgd: Mapping[str, Any], components: set[str]) -> dict[str, Any]:
    """The DGD with `scalingAdapter: {}` on these components: in v1beta1 the field itself opts in (even empty;
    the CRD declares no `enabled`, which the API server would prune), its absence opts out."""
    patched = copy.deepcopy(dict(dgd))
    for component in patched["spec"]["components"]:
        if component["name"] in components:
            component["scalingAdapter"] = {}
    return patched


def ignored_replica_paths(dgd: Mapping[str, Any], components: set[str]) -> list[str]:
    """`ResourceOptions(ignore_changes=...)` for the DGD CustomResource: the replicas the adapters own."""
    return [
        f"spec.components[{index}].replicas"
        for index, component in enumerate(dgd["spec"]["components"])
        if component["name"] in components
    ]


def component_scalings(
    dgd_name: str,
    worker_replicas: Mapping[str, int],
    concurrency: int,
    min_replica_sets: int,
    max_replica_sets: int,
    max_ttft_p50_ms: float,
    queue_depth_per_replica: int,
) -> list[ComponentScaling]:
    """Bounds in replica sets become bounds per worker component (sets x its replicas per set); each worker
    carries its share of the set's measured concurrency (a 4-worker KV-router set at 96 is 24 a worker; a
    1P1D set at 8 is 8 for the prefill worker and 8 for the decode worker)."""
    return [
        ComponentScaling(
            dgd_name,
            component,
            min_replica_sets * per_set,
            max_replica_sets * per_set,
            concurrency / per_set,
            max_ttft_p50_ms,
            queue_depth_per_replica,
        )
        for component, per_set in sorted(worker_replicas.items())
    ]


CA_TAG_PREFIX = "k8s.io/cluster-autoscaler"


def node_group_autoscaler_tags(
    cluster_name: str,
    node_labels: Mapping[str, str],
    gpu_product: str,
    gpus_per_node: int,
    efa_interfaces: int,
    taint_gpu: bool = True,
) -> dict[str, str]:
    """Tags for a GPU node group's Auto Scaling group: auto-discovery, plus the node-template hints that let
    cluster-autoscaler scale it up from zero nodes (it cannot read labels, taints or extended resources from
    a node that does not exist; the EKS API fallback only covers a group that never had a node).
    `gpu_product` matters most: workers select `nvidia.com/gpu.product`, which GPU Feature Discovery sets
    on a running node only, so without the hint no empty group ever matches a pending worker."""
    tags = {f"{CA_TAG_PREFIX}/enabled": "true", f"{CA_TAG_PREFIX}/{cluster_name}": "owned"}
    labels = {**node_labels, GPU_PRODUCT_LABEL: gpu_product}
    tags |= {f"{CA_TAG_PREFIX}/node-template/label/{key}": value for key, value in sorted(labels.items())}
    if taint_gpu:
        tags[f"{CA_TAG_PREFIX}/node-template/taint/{GPU_TAINT['key']}"] = f"{GPU_TAINT['value']}:{GPU_TAINT['effect']}"
    tags[f"{CA_TAG_PREFIX}/node-template/resources/nvidia.com/gpu"] = str(gpus_per_node)
    if efa_interfaces:
        tags[f"{CA_TAG_PREFIX}/node-template/resources/vpc.amazonaws.com/efa"] = str(efa_interfaces)
    return tags


def cluster_autoscaler_policy(cluster_name: str) -> dict[str, Any]:
    """Least privilege for auto-discovery: reads on `*` (those actions support no resource scoping);
    scaling writes only on groups tagged as this cluster's; DescribeNodegroup only on its node groups."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Discover",
                "Effect": "Allow",
                "Resource": "*",
                "Action": [
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:DescribeAutoScalingInstances",
                    "autoscaling:DescribeLaunchConfigurations",
                    "autoscaling:DescribeScalingActivities",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplateVersions",
                    "ec2:GetInstanceTypesFromInstanceRequirements",
                ],
            },
            {
                "Sid": "ScaleOwnGroups",
                "Effect": "Allow",
                "Resource": "*",
                "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                "Condition": {"StringEquals": {f"aws:ResourceTag/{CA_TAG_PREFIX}/{cluster_name}": "owned"}},
            },
            {
                "Sid": "ReadOwnNodegroups",
                "Effect": "Allow",
                "Action": ["eks:DescribeNodegroup"],
                "Resource": f"arn:aws:eks:*:*:nodegroup/{cluster_name}/*/*",
            },
        ],
    }


def cluster_autoscaler_values(cluster_name: str, region: str, image_tag: str, service_account: str) -> dict[str, Any]:
    """Chart values: AWS auto-discovery by the cluster's tags, the least-waste expander (fewest idle GPUs),
    and no scale-down of nodes that hold the prewarmed page cache for less than 10 minutes."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "image": {"tag": image_tag},
        "rbac": {"serviceAccount": {"create": True, "name": service_account}},
        "extraArgs": {
            "expander": "least-waste",
            "balance-similar-node-groups": True,
            "skip-nodes-with-local-storage": False,
            "scale-down-unneeded-time": "10m",
            "scale-down-delay-after-add": "10m",
        },
    }


@dataclass(frozen=True)
class ServingScalingPlan:
    """KEDA (`install_keda` False: the cluster runs it already) and one ScaledObject per scaled component."""

    keda: HelmPin
    install_keda: bool
    scaled_objects: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class ClusterScalingPlan:
    """cluster-autoscaler on the cluster the stack creates; `pool_tags`: the Auto Scaling group tags of each
    managed GPU pool (auto-discovery and the node-template hints for scaling up from zero)."""

    chart: HelmPin
    service_account: str
    policy: dict[str, Any]
    values: dict[str, Any]
    pool_tags: Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class AutoscalingPlan:
    serving: Optional[ServingScalingPlan]
    cluster: Optional[ClusterScalingPlan]


def _checks(
    scaling: AutoscalingConfig,
    config: StackConfig,
    facts: Facts,
    targets: Sequence[PlannedTarget],
    prometheus_url: Optional[str],
) -> list[ConfigError]:
    errors: list[ConfigError] = []
    selected = {t.selected.id: t for t in targets}
    for target_id in scaling.targets:
        if target_id not in selected:
            errors.append(
                ConfigError(
                    f"autoscaling.targets.{target_id}",
                    "not a target of this stack",
                    ", ".join(selected) or "none selected",
                )
            )
        elif selected[target_id].selected.recipe.entry.performance.concurrency is None:
            errors.append(ConfigError(f"autoscaling.targets.{target_id}", "no published concurrency to scale on"))
    if scaling.targets and prometheus_url is None:
        errors.append(
            ConfigError(
                "autoscaling.prometheusUrl",
                "required when the stack runs no Prometheus (monitoring disabled)",
                "the in-cluster URL of the Prometheus KEDA queries",
            )
        )
    create = config.aws.cluster.create if config.aws and config.aws.cluster else None
    cluster_autoscaler = facts.autoscaling.clusterAutoscaler
    if create is None and "enabled" in scaling.clusterAutoscaler.model_fields_set and scaling.clusterAutoscaler.enabled:
        errors.append(
            ConfigError(
                "autoscaling.clusterAutoscaler.enabled",
                "the stack installs cluster-autoscaler only on the cluster it creates (aws.cluster.create)",
                "false",
            )
        )
    elif create is not None and scaling.clusterAutoscaler.enabled:
        image_minor = cluster_autoscaler.imageTag.removeprefix("v").rsplit(".", 1)[0]
        if create.kubernetesVersion != image_minor:
            errors.append(
                ConfigError(
                    "aws.cluster.create.kubernetesVersion",
                    f"cluster-autoscaler "
                    f"{cluster_autoscaler.imageTag} (catalog/autoscaling.yaml) matches Kubernetes "
                    f"{image_minor}; the cluster runs {create.kubernetesVersion}",
                    image_minor,
                )
            )
    return errors + _fit(scaling, facts, targets)


def _fit(scaling: AutoscalingConfig, facts: Facts, targets: Sequence[PlannedTarget]) -> list[ConfigError]:
    """Each pool holds the GPUs of its targets at their `maxReplicaSets` (the others at their configured size)."""
    errors: list[ConfigError] = []
    for pool in {t.pool.name: t.pool for t in targets if t.pool is not None}.values():
        on_pool = [t for t in targets if t.pool is not None and t.pool.name == pool.name]
        most = sum(
            candidate_row(t.selected.recipe, facts.aws).gpus_per_replica_set
            * scaling.targets[t.selected.id].maxReplicaSets
            if t.selected.id in scaling.targets
            else t.selected.gpus
            for t in on_pool
        )
        if most > pool.max_size * pool.gpus_per_node:
            scaled = next(t.selected.id for t in on_pool if t.selected.id in scaling.targets)
            errors.append(
                ConfigError(
                    f"autoscaling.targets.{scaled}.maxReplicaSets",
                    f"the targets on pool "
                    f"{pool.name!r} need {most} GPUs at their maxReplicaSets; the pool holds "
                    f"{pool.max_size} nodes x {pool.gpus_per_node} GPUs",
                    f"fewer sets, or aws.nodePools maxSize >= {math.ceil(most / pool.gpus_per_node)}",
                )
            )
    return errors


def _serving(
    scaling: AutoscalingConfig,
    facts: Facts,
    targets: Sequence[PlannedTarget],
    prometheus_url: str,
    max_ttft_p50_ms: float,
) -> tuple[list[PlannedTarget], ServingScalingPlan]:
    behaviour = ScalingBehaviour(
        scaling.pollingIntervalSeconds, scaling.cooldownPeriodSeconds, scaling.scaleDownStabilizationSeconds
    )
    queries = facts.autoscaling.metrics.queries()
    patched, objects = [], []
    for target in targets:
        bounds = scaling.targets.get(target.selected.id)
        if bounds is None:
            patched.append(target)
            continue
        row = candidate_row(target.selected.recipe, facts.aws)
        assert row.concurrency is not None  # checked
        dgd_name, namespace = target.dgd["metadata"]["name"], target.dgd["metadata"]["namespace"]
        components = component_scalings(
            dgd_name,
            row.worker_replicas,
            row.concurrency,
            bounds.minReplicaSets,
            bounds.maxReplicaSets,
            max_ttft_p50_ms,
            scaling.queueDepthPerReplica,
        )
        objects += [scaled_object(c, namespace, prometheus_url, queries, behaviour) for c in components]
        scaled = set(row.worker_replicas)
        dgd = enable_scaling_adapters(target.dgd, scaled)
        paths = tuple(ignored_replica_paths(dgd, scaled))
        patched.append(dataclasses.replace(target, dgd=dgd, ignored_replica_paths=paths))
    keda = facts.autoscaling.keda.pin()
    return patched, ServingScalingPlan(keda, scaling.installKeda, tuple(objects))


def _cluster(config: StackConfig, facts: Facts, pools: Sequence[ResolvedPool]) -> Optional[ClusterScalingPlan]:
    aws, scaling = config.aws, config.autoscaling
    create = aws.cluster.create if aws and aws.cluster else None
    if aws is None or create is None or scaling is None or not scaling.clusterAutoscaler.enabled:
        return None
    chart = facts.autoscaling.clusterAutoscaler
    tags = {
        pool.name: MappingProxyType(
            node_group_autoscaler_tags(
                create.name,
                pool.node_labels,
                pool.gpu_product,
                pool.gpus_per_node,
                pool.efa_interfaces if pool.fabric == "efa" else 0,
            )
        )
        for pool in pools
        if pool.managed
    }
    return ClusterScalingPlan(
        chart=chart.pin(),
        service_account=chart.serviceAccount,
        policy=cluster_autoscaler_policy(create.name),
        values=cluster_autoscaler_values(create.name, aws.region, chart.imageTag, chart.serviceAccount),
        pool_tags=MappingProxyType(tags),
    )


def plan_autoscaling(
    config: StackConfig,
    facts: Facts,
    targets: Sequence[PlannedTarget],
    pools: Sequence[ResolvedPool],
    prometheus_url: Optional[str],
    max_ttft_p50_ms: float,
) -> tuple[list[PlannedTarget], Optional[AutoscalingPlan]]:
    """The targets with their scaling adapters enabled, and what scales them; or one `ConfigError`.
    `prometheus_url`: `autoscaling.prometheusUrl`, else the stack's own Prometheus; `max_ttft_p50_ms`: the SLO."""
    scaling = config.autoscaling
    if scaling is None:
        return list(targets), None
    url = scaling.prometheusUrl or prometheus_url
    errors = _checks(scaling, config, facts, targets, url)
    if errors:
        raise ConfigError.combined(errors)
    serving = None
    if scaling.targets:
        assert url is not None  # checked
        targets, serving = _serving(scaling, facts, targets, url, max_ttft_p50_ms)
    return list(targets), AutoscalingPlan(serving, _cluster(config, facts, pools))


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
    cheapest: TokenCostRow  # its `basis` says what the output tok/s behind every figure rests on


@dataclass(frozen=True)
class StackCapacity:
    token_costs: tuple[TargetTokenCost, ...]
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
        row = candidate_row(recipe, facts.aws, target.selected.basis)
        cost = target_token_cost(target.selected.id, row, target.pool, offers, criteria)
        costs.append(cost)
        usd = round(cost.usd_per_million, 4) if cost.usd_per_million is not None else None
        deployed.append(
            dataclasses.replace(target, endpoint=target.endpoint.model_copy(update={"usdPerMillionOutputTokens": usd}))
        )
    return tuple(deployed), StackCapacity(tuple(costs), autoscaling)
