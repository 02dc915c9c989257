"""The `demand:` block: what the stack must serve, from which `make plan` sizes it (docs/capacity.md)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal, Optional

import pydantic

from serving_stack.config.types import AsciiText, AvailabilityZone, Block
from serving_stack.errors import ConfigError, bounded

# Upper bounds: far beyond what one stack serves, low enough that the capacity solver (HiGHS, whose
# coefficients must stay finite and well scaled) plans or refuses in words, never fails inside.
MAX_USERS = 1_000_000
MAX_REQUESTS_PER_SECOND = 100_000.0
MAX_TOKENS = 2**20  # per request, input or output: 1M tokens, beyond any context length the catalog serves
MAX_USD_PER_HOUR = 1_000_000.0


class SloConfig(Block):
    """The service level every planned target must meet."""

    minTokensPerSecondPerUser: float = pydantic.Field(gt=0, le=100_000)
    """Output tokens per second each user sees, at least (the published tok/s/user of a target)."""
    maxTtftP50Ms: float = pydantic.Field(gt=0, le=3_600_000)
    """Median time to first token, in milliseconds, at most (also the autoscalers' TTFT trigger)."""


class TokenShapeConfig(Block):
    """The tokens of one request, which turn a request rate into busy serving slots (Little's law)."""

    inputTokens: int = pydantic.Field(gt=0, le=MAX_TOKENS)
    """Prompt tokens per request."""
    outputTokens: int = pydantic.Field(gt=0, le=MAX_TOKENS)
    """Generated tokens per request: with the target's tok/s/user, how long a request holds a slot."""


class DemandConfig(Block):
    """What to serve: exactly one of `concurrentUsers` and `requestsPerSecond` (the latter with `tokenShape`)."""

    concurrentUsers: Optional[int] = pydantic.Field(default=None, gt=0, le=MAX_USERS)
    """Users with one request in flight each."""
    requestsPerSecond: Optional[float] = pydantic.Field(default=None, gt=0, le=MAX_REQUESTS_PER_SECOND)
    """Requests per second; converted per target with its measured time per request."""
    tokenShape: Optional[TokenShapeConfig] = None
    """Tokens per request; required with `requestsPerSecond`."""
    slo: Optional[SloConfig] = None
    """The SLO to meet; unset: the catalog's published criteria (catalog/targets.yaml `criteria`)."""
    budgetUsdPerHour: Optional[float] = pydantic.Field(default=None, gt=0, le=MAX_USD_PER_HOUR)
    """The most the planned nodes may cost, in USD per hour; unset: no budget."""
    gpuTypes: Optional[list[AsciiText]] = pydantic.Field(default=None, min_length=1, max_length=32)
    """The GPU types the plan may use (names of catalog/gpus.yaml, e.g. h200); unset: every one."""
    capacityTypes: list[Literal["on-demand", "spot", "capacity-block"]] = pydantic.Field(
        default=["on-demand"], min_length=1
    )
    """How the planned nodes may be bought; only priced ones are planned (Spot has no sourced price)."""
    maxTargets: Optional[int] = pydantic.Field(default=None, ge=1, le=64)
    """How many different targets the plan may mix (1: one endpoint); unset: any number."""
    availabilityZone: Optional[AvailabilityZone] = None
    """The zone of the node pools `make plan ... WRITE=1` writes; unset: the cluster's first zone."""

    @pydantic.model_validator(mode="after")
    def _one_measure(self) -> DemandConfig:
        if (self.concurrentUsers is None) == (self.requestsPerSecond is None):
            raise ValueError("set exactly one of concurrentUsers, requestsPerSecond")
        if self.requestsPerSecond is not None and self.tokenShape is None:
            raise ValueError("requestsPerSecond needs tokenShape (outputTokens per request converts it to concurrency)")
        return self

    def check_gpu_types(self, known: Collection[str]) -> list[ConfigError]:
        """`gpuTypes` against the GPU names of catalog/gpus.yaml."""
        unknown = [bounded(gpu, quote=False) for gpu in self.gpuTypes or [] if gpu not in known]
        if not unknown:
            return []
        return [ConfigError("demand.gpuTypes", f"unknown GPU type(s) {', '.join(unknown)}", ", ".join(known))]
