"""Gateway inputs from a rendered stack: its Dynamo targets and SageMaker endpoints (from its outputs
contract) and its router settings (from its `gateway` block), so the loopback runs the generator with the
very inputs of the stack's render. Also the loopback timings the tests and the benchmark share.

The failover scenarios need a same-model SageMaker endpoint (prod's Lightning on the HF/LMI path) and a
degraded one serving another model. A stack that names no degraded fallback (prod: it serves Lightning
only) gets a loopback stand-in for it, named as `gateway.degradedFallback.endpoint` would name it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.config.gateway import DegradedFallback, GatewayConfig
from serving_stack.contract.outputs import ServingEndpoint

# The production router settings (`gateway.router`) with short timeouts and cooldown, so each scenario ends in
# seconds. The scenarios' bounds are derived from these values.
LOOPBACK_TIMINGS: dict[str, Any] = {
    "timeoutSeconds": 3.0,
    "streamTimeoutSeconds": 1.5,
    "cooldownSeconds": 10,
    "healthCheckIntervalSeconds": 2,
}
BACKEND_LATENCY_SECONDS = 0.3
REQUESTS, CONCURRENCY = 200, 8
DEGRADED_STAND_IN = ServingEndpoint(
    id="degraded-stand-in",
    kind="sagemaker",
    servedModelName="nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    url="",
    gpus=0,
)


@dataclass(frozen=True)
class StackBackends:
    dynamo: tuple[ServingEndpoint, ...]
    sagemaker: tuple[ServingEndpoint, ...]  # the stack's endpoints, plus the degraded stand-in if it has none
    stack_sagemaker: tuple[ServingEndpoint, ...]  # the stack's endpoints only
    model: str  # the model the Dynamo targets serve
    same_model_endpoint: ServingEndpoint
    degraded_endpoint: ServingEndpoint  # an endpoint serving another model
    stack_gateway: GatewayConfig  # the stack's own `gateway` block

    def settings(self, replicas: Optional[int] = None, degraded: Optional[str] = "", **router: Any) -> GatewayConfig:
        """The stack's `gateway` block with both fallbacks on: the scenarios exercise the generator's failover,
        which a stack whose pairs answer alike gets (prod keeps its SageMaker group out of its fallbacks).
        `degraded`: the degraded fallback endpoint (default: `degraded_endpoint`; None: none); `router`:
        `gateway.router` fields."""
        endpoint = self.degraded_endpoint.id if degraded == "" else degraded
        fields: dict[str, Any] = {
            "degradedFallback": DegradedFallback(endpoint=endpoint) if endpoint else None,
            "sameModelFallback": True,
            "router": self.stack_gateway.router.model_copy(update=router),
        }
        if replicas is not None:
            fields["replicas"] = replicas
        return self.stack_gateway.model_copy(update=fields)


def backends_of(outputs: Mapping[str, Any]) -> tuple[tuple[ServingEndpoint, ...], list[ServingEndpoint]]:
    """A rendered stack's Dynamo targets and SageMaker endpoints (its outputs contract), whatever models they
    serve."""
    endpoints = [ServingEndpoint.model_validate(e) for e in outputs["endpoints"]]
    return tuple(e for e in endpoints if e.kind == "dynamo"), [e for e in endpoints if e.kind == "sagemaker"]


def stack_backends(outputs: Mapping[str, Any], gateway: GatewayConfig) -> StackBackends:
    """The failover scenarios' inputs; the stack must serve one model from two or more Dynamo targets."""
    dynamo, sagemaker = backends_of(outputs)
    models = {b.servedModelName for b in dynamo}
    if len(models) != 1 or len(dynamo) < 2:
        raise ValueError(f"the failover scenarios need one model served by two or more Dynamo targets, got {models}")
    (model,) = models
    same_model = next((e for e in sagemaker if e.servedModelName == model), None)
    if same_model is None:
        raise ValueError(f"the failover scenarios need a SageMaker endpoint serving {model}; the stack has none")
    named = gateway.degradedFallback.endpoint if gateway.degradedFallback else None
    degraded = next((e for e in sagemaker if e.id == named), None)
    stand_ins = []
    if degraded is None:
        degraded = DEGRADED_STAND_IN.model_copy(update={"region": same_model.region})
        stand_ins.append(degraded)
    return StackBackends(dynamo, (*sagemaker, *stand_ins), tuple(sagemaker), model, same_model, degraded, gateway)
