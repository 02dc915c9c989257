"""The NVIDIA DRA driver, for pools whose instances join multi-node NVLink domains (P6e-GB200): its kubelet
plugin runs only on those pools' nodes and serves ComputeDomains (IMEX); GPUs stay with the device plugin."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

from serving_stack.facts.aws_platform import DraDriverChart
from serving_stack.plan.pools import ResolvedPool


@dataclass(frozen=True)
class DraDriverPlan:
    chart: DraDriverChart
    pools: tuple[str, ...]


def plan_dra_driver(install: bool, pools: Iterable[ResolvedPool], chart: DraDriverChart) -> Optional[DraDriverPlan]:
    """None when no pool needs ComputeDomains, or the cluster runs the driver already (`install` off)."""
    names = tuple(pool.name for pool in pools if pool.compute_domains)
    return DraDriverPlan(chart, names) if install and names else None
