"""The `demand:` config block: what the stack must serve, from which the capacity planner sizes it.

    demand:
      concurrentUsers: 400            # or requestsPerSecond: 12 with tokenShape
      tokenShape: {inputTokens: 64000, outputTokens: 400}
      slo: {minTokensPerSecondPerUser: 100, maxTtftP50Ms: 1000}   # default: the catalog's criteria
      budgetUsdPerHour: 500           # optional
      gpuTypes: [h200, b200]          # optional, default: every GPU type
      capacityTypes: [on-demand]      # default [on-demand]
      maxTargets: 1                   # optional: 1 = one endpoint, no mixing

The base class repeats `nemotron.config.serving.Block`'s two settings instead of importing it, because
`nemotron.config.stack` imports this module (importing `nemotron.config.serving` from here would
import the package `__init__`, which imports `stack`, in a cycle).
"""
from __future__ import annotations

from typing import Literal, Optional

import pydantic

from serving_stack.plan.capacity_model import CapacityType, Demand, Slo, TokenShape


class ConfigBlock(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class SloConfig(ConfigBlock):
    minTokensPerSecondPerUser: float = pydantic.Field(gt=0)
    maxTtftP50Ms: float = pydantic.Field(gt=0)


class TokenShapeConfig(ConfigBlock):
    inputTokens: int = pydantic.Field(gt=0)
    outputTokens: int = pydantic.Field(gt=0)


class DemandConfig(ConfigBlock):
    concurrentUsers: Optional[int] = pydantic.Field(default=None, gt=0)
    requestsPerSecond: Optional[float] = pydantic.Field(default=None, gt=0)
    tokenShape: Optional[TokenShapeConfig] = None
    slo: Optional[SloConfig] = None
    budgetUsdPerHour: Optional[float] = pydantic.Field(default=None, gt=0)
    gpuTypes: Optional[list[str]] = pydantic.Field(default=None, min_length=1)
    capacityTypes: list[Literal["on-demand", "spot", "capacity-block"]] = pydantic.Field(default=["on-demand"], min_length=1)
    maxTargets: Optional[int] = pydantic.Field(default=None, ge=1)

    @pydantic.model_validator(mode="after")
    def _one_measure(self) -> "DemandConfig":
        if (self.concurrentUsers is None) == (self.requestsPerSecond is None):
            raise ValueError("set exactly one of concurrentUsers, requestsPerSecond")
        if self.requestsPerSecond is not None and self.tokenShape is None:
            raise ValueError("requestsPerSecond needs tokenShape (outputTokens per request converts it to concurrency)")
        return self

    def unknown_gpu_types(self, known: list[str]) -> list[str]:
        return [gpu for gpu in self.gpuTypes or [] if gpu not in known]

    def to_demand(self, catalog_criteria: Slo) -> Demand:
        capacity_types: tuple[CapacityType, ...] = tuple(dict.fromkeys(self.capacityTypes))
        return Demand(
            slo=Slo(self.slo.minTokensPerSecondPerUser, self.slo.maxTtftP50Ms) if self.slo else catalog_criteria,
            concurrent_users=self.concurrentUsers,
            requests_per_second=self.requestsPerSecond,
            token_shape=TokenShape(self.tokenShape.inputTokens, self.tokenShape.outputTokens) if self.tokenShape else None,
            budget_usd_per_hour=self.budgetUsdPerHour,
            gpu_types=tuple(self.gpuTypes) if self.gpuTypes else None,
            capacity_types=capacity_types,
            max_targets=self.maxTargets,
        )
