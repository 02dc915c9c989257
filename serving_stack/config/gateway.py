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
    """The `sagemaker.endpoints[].name` of this stack to fall back to."""


class RouterConfig(Block):
    """LiteLLM router behaviour. `timeoutSeconds` bounds a whole non-streaming answer (64K-token prompts,
    long outputs), `streamTimeoutSeconds` the silence before a stream's first chunk (failover is only
    possible before it)."""

    numRetries: int = pydantic.Field(default=2, ge=0, le=10)
    """Retries of a failed request on the model group before failover (LiteLLM router `num_retries`)."""
    allowedFails: int = pydantic.Field(default=1, ge=0, le=100)
    """Failures in a minute before a deployment is cooled down (LiteLLM router `allowed_fails`)."""
    cooldownSeconds: int = pydantic.Field(default=30, ge=1, le=3600)
    """Seconds a failing deployment is taken out of rotation (LiteLLM router `cooldown_time`)."""
    timeoutSeconds: float = pydantic.Field(default=600.0, gt=0, le=3600)
    """Seconds for a whole non-streaming answer (LiteLLM router `timeout`)."""
    streamTimeoutSeconds: float = pydantic.Field(default=10.0, gt=0, le=600)
    """Seconds of silence before a stream's first chunk, after which the router fails over (LiteLLM `stream_timeout`);
    at most `timeoutSeconds`."""
    healthCheckIntervalSeconds: int = pydantic.Field(default=15, ge=1, le=3600)
    """Seconds between the proxy's background health checks of each backend (LiteLLM `health_check_interval`)."""

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
    """Deploy the gateway; needs the `gatewayMasterKey` secret and at least one target or SageMaker endpoint."""
    name: DnsLabel = "llm-gateway"
    """The name of the gateway's Deployment, Service and Secrets (a DNS label), in `kubernetes.namespace`."""
    replicas: int = pydantic.Field(default=2, ge=1, le=64)
    """The HPA's minimum replicas (Kubernetes HorizontalPodAutoscaler `minReplicas`); above 1 the stack adds Redis for
    the shared cooldown state."""
    maxReplicas: Optional[int] = pydantic.Field(default=None, ge=1, le=256)
    """The HPA's maximum replicas (`maxReplicas`); unset: 3 x `replicas`; at least `replicas`."""
    targetCpuUtilization: int = pydantic.Field(default=70, ge=10, le=100)
    """Average CPU utilization, in percent of the request, the HPA holds (`averageUtilization`)."""
    allowedNamespaces: list[DnsLabel] = pydantic.Field(default_factory=list)
    """Namespaces whose pods may call the gateway besides its own (NetworkPolicy ingress); `[]`: only its own
    namespace's."""
    degradedFallback: Optional[DegradedFallback] = None
    """A SageMaker endpoint of another model tried last by every model; unset: none."""
    sameModelFallback: bool = True
    """Whether the Dynamo targets' model group fails over to the SageMaker endpoints serving the same model
    (false: those stay a group of their own, `<model>@sagemaker`, that clients call by name). Every fallback
    pair must answer alike (docs/gateway.md, "Failover between backends that answer alike"): the render refuses
    a pair whose parsers, served model name or maximum context differ, naming this key."""
    router: RouterConfig = RouterConfig()
    """How the LiteLLM router retries, times out and fails over."""
    sagemakerEgressCidrs: list[Cidr] = pydantic.Field(default_factory=lambda: ["0.0.0.0/0"], min_length=1)
    """Where the gateway may reach the SageMaker runtime (NetworkPolicy egress): the VPC CIDR with a `sagemaker.runtime`
    interface endpoint, else `0.0.0.0/0` for its public endpoint."""

    @pydantic.model_validator(mode="after")
    def _max_at_least_min(self) -> GatewayConfig:
        if self.maxReplicas is not None and self.maxReplicas < self.replicas:
            raise ValueError(f"maxReplicas ({self.maxReplicas}) must be >= replicas ({self.replicas})")
        return self
