"""The `demand:` config block: what the stack must serve, from which the capacity planner sizes it.

demand:
  concurrentUsers: 400            # or requestsPerSecond: 12 with tokenShape
  tokenShape: {inputTokens: 64000, outputTokens: 400}
  slo: {minTokensPerSecondPerUser: 100, maxTtftP50Ms: 1000}   # default: the catalog's criteria
  budgetUsdPerHour: 500           # optional
  gpuTypes: [h200, b200]          # optional, default: every GPU type
  capacityTypes: [on-demand]      # default [on-demand]
  maxTargets: 1                   # optional: 1 = one endpoint, no mixing
  availabilityZone: us-east-1a    # the zone of the node pools `make plan ... WRITE=1` writes
                                  # (default: the cluster's first zone)"""

from __future__ import annotations

from typing import Literal, Optional

import pydantic

from serving_stack.config.types import AsciiText, AvailabilityZone, Block
from serving_stack.errors import bounded

# Upper bounds: far beyond what one stack serves, low enough that the capacity solver (HiGHS, whose
# coefficients must stay finite and well scaled) plans or refuses in words, never fails inside.
MAX_USERS = 1_000_000
MAX_REQUESTS_PER_SECOND = 100_000.0
MAX_TOKENS = 2**20  # per request, input or output: 1M tokens, beyond any context length the catalog serves
MAX_USD_PER_HOUR = 1_000_000.0


class SloConfig(Block):
    minTokensPerSecondPerUser: float = pydantic.Field(gt=0, le=100_000)
    maxTtftP50Ms: float = pydantic.Field(gt=0, le=3_600_000, description="at most an hour")


class TokenShapeConfig(Block):
    inputTokens: int = pydantic.Field(gt=0, le=MAX_TOKENS)
    outputTokens: int = pydantic.Field(gt=0, le=MAX_TOKENS)


class DemandConfig(Block):
    concurrentUsers: Optional[int] = pydantic.Field(default=None, gt=0, le=MAX_USERS)
    requestsPerSecond: Optional[float] = pydantic.Field(default=None, gt=0, le=MAX_REQUESTS_PER_SECOND)
    tokenShape: Optional[TokenShapeConfig] = None
    slo: Optional[SloConfig] = None
    budgetUsdPerHour: Optional[float] = pydantic.Field(default=None, gt=0, le=MAX_USD_PER_HOUR)
    gpuTypes: Optional[list[AsciiText]] = pydantic.Field(default=None, min_length=1, max_length=32)
    capacityTypes: list[Literal["on-demand", "spot", "capacity-block"]] = pydantic.Field(
        default=["on-demand"], min_length=1
    )
    maxTargets: Optional[int] = pydantic.Field(default=None, ge=1, le=64)
    availabilityZone: Optional[AvailabilityZone] = None

    @pydantic.model_validator(mode="after")
    def _one_measure(self) -> DemandConfig:
        if (self.concurrentUsers is None) == (self.requestsPerSecond is None):
            raise ValueError("set exactly one of concurrentUsers, requestsPerSecond")
        if self.requestsPerSecond is not None and self.tokenShape is None:
            raise ValueError("requestsPerSecond needs tokenShape (outputTokens per request converts it to concurrency)")
        return self

    def unknown_gpu_types(self, known: list[str]) -> list[str]:
        """The unknown ones, each cut short as an error may echo it."""
        return [bounded(gpu, quote=False) for gpu in self.gpuTypes or [] if gpu not in known]
