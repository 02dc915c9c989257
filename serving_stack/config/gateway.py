"""Config block `gateway`: one OpenAI-compatible URL with failover (the LiteLLM proxy, docs/gateway.md).

The defaults are the production values (measured: shared/reference/GATEWAY-FACTS.md). Which backends it
routes to is not config: the plan builds the model groups from the selected targets and the SageMaker
endpoints. The master key is the secret `gatewayMasterKey`, never a value of this block.
"""

from __future__ import annotations

from typing import Optional

import pydantic

from serving_stack.config.types import AsciiText, Block, Cidr, DnsLabel

MASTER_KEY_SECRET = "gatewayMasterKey"


class DegradedFallback(Block):
    """A SageMaker endpoint of ANOTHER model, tried last by every other model; its answers name it."""

    endpoint: AsciiText


class RouterConfig(Block):
    """LiteLLM router behaviour. `timeoutSeconds` bounds a whole non-streaming answer (64K-token prompts,
    long outputs), `streamTimeoutSeconds` the silence before a stream's first chunk (failover is only
    possible before it)."""

    numRetries: int = pydantic.Field(default=2, ge=0, le=10)
    allowedFails: int = pydantic.Field(default=1, ge=0, le=100)
    cooldownSeconds: int = pydantic.Field(default=30, ge=1, le=3600)
    timeoutSeconds: float = pydantic.Field(default=600.0, gt=0, le=3600)
    streamTimeoutSeconds: float = pydantic.Field(default=10.0, gt=0, le=600)
    healthCheckIntervalSeconds: int = pydantic.Field(default=15, ge=1, le=3600)

    @pydantic.model_validator(mode="after")
    def _stream_timeout_within_timeout(self) -> RouterConfig:
        if self.streamTimeoutSeconds > self.timeoutSeconds:
            raise ValueError("streamTimeoutSeconds must be <= timeoutSeconds")
        return self


class GatewayConfig(Block):
    """`replicas` is the HPA's minimum (more than one router process adds Redis for the shared cooldown
    state), `maxReplicas` its maximum (unset: 3 x replicas). `allowedNamespaces`: whose pods may call the
    gateway besides its own namespace's. `sagemakerEgressCidrs`: where the SageMaker runtime is reached
    (the VPC CIDR when a sagemaker.runtime interface endpoint exists; else its public endpoint)."""

    enabled: bool = False
    name: DnsLabel = "llm-gateway"
    replicas: int = pydantic.Field(default=2, ge=1, le=64)
    maxReplicas: Optional[int] = pydantic.Field(default=None, ge=1, le=256)
    targetCpuUtilization: int = pydantic.Field(default=70, ge=10, le=100)
    allowedNamespaces: list[DnsLabel] = pydantic.Field(default_factory=list)
    degradedFallback: Optional[DegradedFallback] = None
    sameModelFallback: bool = True
    """Whether the Dynamo targets' model group fails over to the SageMaker endpoints serving the same model
    (false: those stay a group of their own, `<model>@sagemaker`, that clients call by name). Every fallback
    pair must answer alike (docs/gateway.md, "Failover between backends that answer alike"): the render refuses
    a pair whose parsers, served model name or maximum context differ, naming this key."""
    router: RouterConfig = RouterConfig()
    sagemakerEgressCidrs: list[Cidr] = pydantic.Field(default_factory=lambda: ["0.0.0.0/0"], min_length=1)

    @pydantic.model_validator(mode="after")
    def _max_at_least_min(self) -> GatewayConfig:
        if self.maxReplicas is not None and self.maxReplicas < self.replicas:
            raise ValueError(f"maxReplicas ({self.maxReplicas}) must be >= replicas ({self.replicas})")
        return self
