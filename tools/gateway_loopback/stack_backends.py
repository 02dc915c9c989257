"""Gateway inputs from a stack's outputs contract: its Dynamo targets as backends, its SageMaker endpoints,
and a same-model SageMaker endpoint of the targets' model when the stack has none yet (issue 15: prod's
fallback becomes Lightning from its Hugging Face checkpoint; until that lands, the loopback runs add the
endpoint that plan will produce). Also the loopback timings the tests and the benchmark share."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from serving_stack.plan.gateway import DynamoBackend, GatewaySettings, SageMakerBackend

# The production router settings with short timeouts and cooldown, so each scenario ends in seconds.
# The scenarios' bounds are derived from these values.
LOOPBACK_TIMINGS: dict[str, Any] = dict(timeout_seconds=3.0, stream_timeout_seconds=1.5, cooldown_seconds=10,
                                        health_check_interval_seconds=2)
BACKEND_LATENCY_SECONDS = 0.3
REQUESTS, CONCURRENCY = 200, 8


@dataclass(frozen=True)
class StackBackends:
    dynamo: tuple[DynamoBackend, ...]
    sagemaker: tuple[SageMakerBackend, ...]
    model: str  # the model the Dynamo targets serve
    same_model_endpoint: SageMakerBackend
    degraded_endpoint: SageMakerBackend  # an endpoint of the stack serving another model

    def settings(self, **overrides: Any) -> GatewaySettings:
        fields: dict[str, Any] = {"degraded_fallback_endpoint": self.degraded_endpoint.name, **overrides}
        return dataclasses.replace(GatewaySettings(), **fields)


DEGRADED_STAND_IN_MODEL = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def stack_backends(outputs: Mapping[str, Any]) -> StackBackends:
    endpoints = outputs["endpoints"]
    dynamo = tuple(DynamoBackend(e["id"], e["servedModelName"], e["url"]) for e in endpoints if e["kind"] == "dynamo")
    sagemaker = [SageMakerBackend(e["id"], e["region"], e["servedModelName"]) for e in endpoints if e["kind"] == "sagemaker"]
    models = {b.served_model_name for b in dynamo}
    if len(models) != 1 or len(dynamo) < 2:
        raise ValueError(f"the failover scenarios need one model served by two or more Dynamo targets, got {models}")
    (model,) = models
    region = sagemaker[0].region if sagemaker else "us-east-1"
    # Each scenario needs a same-model fallback and a named degraded one; where the stack has none, a
    # loopback stand-in takes its place (the local SageMaker runtime answers for any endpoint name).
    same_model = next((e for e in sagemaker if e.served_model_name == model), None)
    if same_model is None:
        same_model = SageMakerBackend(f"{model.split('/')[-1].lower()}-hf"[:63], region, model)
        sagemaker.append(same_model)
    degraded = next((e for e in sagemaker if e.served_model_name != model), None)
    if degraded is None:
        degraded = SageMakerBackend("degraded-stand-in", region, DEGRADED_STAND_IN_MODEL)
        sagemaker.append(degraded)
    return StackBackends(dynamo, tuple(sagemaker), model, same_model, degraded)
