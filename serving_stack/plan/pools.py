"""GPU node pools as plain data: what each pool is (from config + instance facts), its node labels, which
pool each target is placed on, and what the pools cost.

Pure functions of a validated `StackConfig` (run `check_aws` first: these assume it passed).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional

from serving_stack.facts.catalog import Catalog
from serving_stack.config.aws import pool_fabric, pool_facts, target_pool
from serving_stack.config.stack import StackConfig
from serving_stack.facts.instance_types import AwsCatalog, NetworkInterface, load_aws_catalog

LABEL_PREFIX = "nemotron.nvidia.com"
POOL_LABEL = f"{LABEL_PREFIX}/pool"
FABRIC_LABEL = f"{LABEL_PREFIX}/fabric"
EFA_PER_GPU_LABEL = f"{LABEL_PREFIX}/efa-per-gpu"
GPU_LABEL = f"{LABEL_PREFIX}/gpu"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
CAPACITY_TYPES = {"on-demand": "ON_DEMAND", "spot": "SPOT", "capacity-block": "CAPACITY_BLOCK"}


@dataclass(frozen=True)
class ResolvedPool:
    """One pool with every fact the components and the placement need, defaults applied."""

    name: str
    managed: bool
    gpu: str
    gpu_product: str
    gpus_per_node: int
    arch: str
    fabric: str
    efa_interfaces: int
    min_size: int
    desired_size: int
    max_size: int
    capacity_type: str
    instance_type: Optional[str] = None
    ami_type: Optional[str] = None
    availability_zone: Optional[str] = None
    subnet_id: Optional[str] = None
    capacity_reservation_id: Optional[str] = None
    nvme_disks: int = 0
    root_volume_gib: int = 200
    on_demand_usd_per_hour: Optional[float] = None
    efa_layout: tuple[NetworkInterface, ...] = ()

    @property
    def efa_per_gpu(self) -> int:
        return self.efa_interfaces // self.gpus_per_node if self.fabric == "efa" else 0

    @property
    def eks_capacity_type(self) -> str:
        return CAPACITY_TYPES[self.capacity_type]

    @property
    def node_labels(self) -> dict[str, str]:
        """The label contract of pool nodes (placement and the policy pack select on it)."""
        labels = {POOL_LABEL: self.name, FABRIC_LABEL: self.fabric, GPU_LABEL: self.gpu}
        if self.fabric == "efa":
            labels[EFA_PER_GPU_LABEL] = str(self.efa_per_gpu)
        return labels


def resolve_pools(config: StackConfig, aws_catalog: Optional[AwsCatalog] = None) -> dict[str, ResolvedPool]:
    aws_catalog = aws_catalog or load_aws_catalog()
    if config.aws is None:
        return {}
    existing = config.aws.cluster.existing if config.aws.cluster else None
    pools: dict[str, ResolvedPool] = {}
    for pool in config.aws.nodePools:
        facts = pool_facts(pool, aws_catalog)
        instance = facts.instance
        fabric = pool_fabric(pool, facts)
        subnet = pool.subnetId or (existing.privateSubnetIds.get(pool.availabilityZone) if existing else None)
        pools[pool.name] = ResolvedPool(
            name=pool.name,
            managed=pool.managed,
            gpu=facts.gpu,
            gpu_product=pool.gpuProduct or aws_catalog.gpus[facts.gpu].productLabel,
            gpus_per_node=facts.gpus_per_node,
            arch=facts.arch,
            fabric=fabric,
            efa_interfaces=facts.efa_interfaces,
            min_size=pool.minSize,
            desired_size=pool.desiredSize,
            max_size=pool.maxSize,
            capacity_type=pool.capacityType,
            instance_type=pool.instanceType,
            ami_type=instance.amiType if instance else None,
            availability_zone=pool.availabilityZone,
            subnet_id=subnet,
            capacity_reservation_id=pool.capacityReservationId,
            nvme_disks=instance.nvmeDisks if instance else 0,
            root_volume_gib=pool.rootVolumeGiB,
            on_demand_usd_per_hour=instance.onDemandUsdPerHour if instance else None,
            efa_layout=tuple(instance.efa_layout()) if instance and fabric == "efa" else (),
        )
    return pools


def target_pools(
    config: StackConfig, catalog: Catalog, pools: dict[str, ResolvedPool], aws_catalog: Optional[AwsCatalog] = None
) -> dict[str, ResolvedPool]:
    """Target id -> the pool (from `resolve_pools`) it is placed on; unplaced targets are absent."""
    aws_catalog = aws_catalog or load_aws_catalog()
    placed: dict[str, ResolvedPool] = {}
    for index, target in enumerate(config.targets):
        name, _ = target_pool(config, index, catalog.recipe(target.id), aws_catalog)
        if name:
            placed[target.id] = pools[name]
    return placed


@dataclass(frozen=True)
class PoolCostRow:
    """Capacity and list-price cost of one pool. Prices are on-demand list prices (an upper bound for
    spot, an estimate for Capacity Blocks); None where the instance facts publish no price."""

    pool: str
    instanceType: Optional[str]
    capacityType: str
    gpusPerNode: int
    nodes: str
    gpus: str
    usdPerHourDesired: Optional[float]
    usdPerHourMin: Optional[float]
    usdPerHourMax: Optional[float]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _usd(price: Optional[float], nodes: int) -> Optional[float]:
    return round(price * nodes, 2) if price is not None else None


def pool_cost_rows(pools: dict[str, ResolvedPool]) -> list[PoolCostRow]:
    """One row per pool: `nodes`/`gpus` as `min..max` ranges, hourly cost at desired, min and max nodes."""
    return [
        PoolCostRow(
            pool=pool.name,
            instanceType=pool.instance_type,
            capacityType=pool.capacity_type,
            gpusPerNode=pool.gpus_per_node,
            nodes=f"{pool.min_size}..{pool.max_size}",
            gpus=f"{pool.min_size * pool.gpus_per_node}..{pool.max_size * pool.gpus_per_node}",
            usdPerHourDesired=_usd(pool.on_demand_usd_per_hour, pool.desired_size),
            usdPerHourMin=_usd(pool.on_demand_usd_per_hour, pool.min_size),
            usdPerHourMax=_usd(pool.on_demand_usd_per_hour, pool.max_size),
        )
        for pool in pools.values()
    ]


def _money(value: Optional[float]) -> str:
    return f"${value:,.2f}" if value is not None else "n/a"


def pool_cost_markdown(rows: list[PoolCostRow]) -> str:
    """The rows as a `summary.md` table."""
    lines = [
        "| pool | instance type | capacity | nodes | GPUs | $/h at desired | $/h at min..max |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| `{r.pool}` | {r.instanceType or 'n/a'} | {r.capacityType} | {r.nodes} | {r.gpus} | "
            f"{_money(r.usdPerHourDesired)} | {_money(r.usdPerHourMin)}..{_money(r.usdPerHourMax)} |"
        )
    return "\n".join(lines)
