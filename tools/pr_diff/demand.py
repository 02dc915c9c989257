"""The new and changed targets of a change that fail what the stack must serve (its `demand:` block).

A target fails when its published tok/s/user is below `demand.slo.minTokensPerSecondPerUser` or its TTFT p50
is not below `demand.slo.maxTtftP50Ms` (the catalog's published criteria when the stack states no SLO), or
when a figure the verdict needs is unpublished (an unknown never passes, as `Criteria.passed_by`). Its $1M
output tokens price (`endpoints[].usdPerMillionOutputTokens`) goes with it, and the stack's $/h is judged
against `demand.budgetUsdPerHour` where one is set. A target counts as changed when its endpoint output
changed, or when the SLO it is judged by did.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import pydantic

from serving_stack.config.demand import DemandConfig, SloConfig
from serving_stack.facts.catalog import Catalog, Criteria, Performance


@dataclass(frozen=True)
class DemandCriteria:
    """`stated`: `limits` are the stack's `demand.slo` (else the catalog's published criteria)."""

    limits: SloConfig | Criteria
    budget_usd_per_hour: Optional[float]
    stated: bool

    def key(self, field: str) -> str:
        return f"`demand.slo.{field}`" if self.stated else f"the catalog's `criteria.{field}`; no `demand.slo`"


@dataclass(frozen=True)
class DemandMiss:
    """A target of the head that is new or changed and fails the criteria: each failure as one phrase."""

    target: str
    status: str  # "new", "changed", "judged by a changed SLO"
    failures: tuple[str, ...]
    usd_per_million: Optional[float]


def stack_criteria(config: Mapping[str, Any], catalog: Catalog) -> DemandCriteria:
    """The criteria of a stack's config (`project:key` -> value, as `tools.stack_files.stack_config` reads it)."""
    raw = next((value for key, value in config.items() if key.split(":")[-1] == "demand"), None)
    criteria = catalog.data.criteria
    try:
        demand = DemandConfig.model_validate(json.loads(raw)) if isinstance(raw, str) else None
    except (ValueError, pydantic.ValidationError):
        demand = None  # the render already refused a bad block; a base of another schema is judged by the catalog
    slo = demand.slo if demand else None
    return DemandCriteria(slo or criteria, demand.budgetUsdPerHour if demand else None, slo is not None)


def _number(value: float) -> str:
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def failures(endpoint: Mapping[str, Any], performance: Optional[Performance], criteria: DemandCriteria) -> list[str]:
    """What of `criteria` the endpoint fails, one phrase each."""
    found = []
    per_user = endpoint.get("expectedTokensPerSecondPerUser")
    floor = criteria.limits.minTokensPerSecondPerUser
    key = criteria.key("minTokensPerSecondPerUser")
    if per_user is None:
        found.append(f"tok/s/user unpublished, so it cannot be shown to reach {_number(floor)} ({key})")
    elif per_user < floor:
        found.append(f"{_number(per_user)} tok/s/user, below {_number(floor)} ({key})")
    ttft = performance.ttftP50Ms if performance else None
    ceiling = criteria.limits.maxTtftP50Ms
    key = criteria.key("maxTtftP50Ms")
    if ttft is None:
        found.append(f"TTFT p50 unpublished, so it cannot be shown to stay under {_number(ceiling)} ms ({key})")
    elif ttft >= ceiling:
        found.append(f"TTFT p50 {_number(ttft)} ms, not under {_number(ceiling)} ms ({key})")
    return found


def demand_misses(
    base_outputs: Mapping[str, Any],
    head_outputs: Mapping[str, Any],
    criteria: DemandCriteria,
    base_criteria: DemandCriteria,
    catalog: Catalog,
) -> tuple[DemandMiss, ...]:
    """The head's Dynamo targets that are new or changed and fail `criteria`, in the head's order."""
    before = {e["id"]: e for e in base_outputs.get("endpoints") or []}
    slo_changed = criteria.limits.model_dump() != base_criteria.limits.model_dump()
    misses = []
    for endpoint in head_outputs.get("endpoints") or []:
        if endpoint.get("kind") != "dynamo":
            continue
        old = before.get(endpoint["id"])
        status = "new" if old is None else "changed" if old != endpoint else "judged by a changed SLO"
        if status == "judged by a changed SLO" and not slo_changed:
            continue
        try:
            performance: Optional[Performance] = catalog.recipe(endpoint["id"]).entry.performance
        except KeyError:  # a target the head's catalog does not know: its TTFT is unpublished here
            performance = None
        failed = failures(endpoint, performance, criteria)
        if failed:
            misses.append(DemandMiss(endpoint["id"], status, tuple(failed), endpoint.get("usdPerMillionOutputTokens")))
    return tuple(misses)
