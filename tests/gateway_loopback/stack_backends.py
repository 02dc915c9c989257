"""Gateway inputs from a rendered stack: its Dynamo targets and SageMaker endpoints (from its outputs
contract) and its router settings (from its `gateway` block), so the loopback runs the generator with the
very inputs of the stack's render. Also the loopback timings the tests and the benchmark share.

The failover scenarios need a same-model SageMaker endpoint (prod's Lightning on the HF/LMI path) and a
degraded one serving another model. A stack that names no degraded fallback (prod: it serves Lightning
only) gets a loopback stand-in for it, named as `gateway.degradedFallback.endpoint` would name it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from serving_stack.config.gateway import GatewayConfig
from serving_stack.plan.gateway import DynamoBackend, GatewaySettings, SageMakerBackend, gateway_settings

# The production router settings with short timeouts and cooldown, so each scenario ends in seconds.
# The scenarios' bounds are derived from these values.
LOOPBACK_TIMINGS: dict[str, Any] = {
    "timeout_seconds": 3.0,
    "stream_timeout_seconds": 1.5,
    "cooldown_seconds": 10,
    "health_check_interval_seconds": 2,
}
BACKEND_LATENCY_SECONDS = 0.3
REQUESTS, CONCURRENCY = 200, 8
DEGRADED_STAND_IN = SageMakerBackend("degraded-stand-in", "", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")


@dataclass(frozen=True)
class StackBackends:
    dynamo: tuple[DynamoBackend, ...]
    sagemaker: tuple[SageMakerBackend, ...]  # the stack's endpoints, plus the degraded stand-in if it has none
    stack_sagemaker: tuple[SageMakerBackend, ...]  # the stack's endpoints only
    model: str  # the model the Dynamo targets serve
    same_model_endpoint: SageMakerBackend
    degraded_endpoint: SageMakerBackend  # an endpoint serving another model
    stack_settings: GatewaySettings  # the stack's own, from its `gateway` block

    def settings(self, **overrides: Any) -> GatewaySettings:
        """The stack's settings with both fallbacks on: the scenarios exercise the generator's failover, which
        a stack whose pairs answer alike gets (prod keeps its SageMaker group out of its fallbacks)."""
        fields: dict[str, Any] = {
            "degraded_fallback_endpoint": self.degraded_endpoint.name,
            "same_model_fallback": True,
            **overrides,
        }
        return dataclasses.replace(self.stack_settings, **fields)


def backends_of(outputs: Mapping[str, Any]) -> tuple[tuple[DynamoBackend, ...], list[SageMakerBackend]]:
    """A rendered stack's Dynamo targets and SageMaker endpoints as the gateway plan reads them, whatever
    models they serve."""
    endpoints = outputs["endpoints"]
    dynamo = tuple(DynamoBackend(e["id"], e["servedModelName"], e["url"]) for e in endpoints if e["kind"] == "dynamo")
    sagemaker = [
        SageMakerBackend(e["id"], e["region"], e["servedModelName"]) for e in endpoints if e["kind"] == "sagemaker"
    ]
    return dynamo, sagemaker


def stack_backends(outputs: Mapping[str, Any], gateway: GatewayConfig) -> StackBackends:
    """The failover scenarios' inputs; the stack must serve one model from two or more Dynamo targets."""
    dynamo, sagemaker = backends_of(outputs)
    models = {b.served_model_name for b in dynamo}
    if len(models) != 1 or len(dynamo) < 2:
        raise ValueError(f"the failover scenarios need one model served by two or more Dynamo targets, got {models}")
    (model,) = models
    same_model = next((e for e in sagemaker if e.served_model_name == model), None)
    if same_model is None:
        raise ValueError(f"the failover scenarios need a SageMaker endpoint serving {model}; the stack has none")
    settings = gateway_settings(gateway)
    named = settings.degraded_fallback_endpoint
    degraded = next((e for e in sagemaker if e.name == named), None)
    stand_ins = []
    if degraded is None:
        degraded = dataclasses.replace(DEGRADED_STAND_IN, region=same_model.region)
        stand_ins.append(degraded)
    return StackBackends(dynamo, (*sagemaker, *stand_ins), tuple(sagemaker), model, same_model, degraded, settings)
