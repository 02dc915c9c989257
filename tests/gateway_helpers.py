"""Gateway inputs derived from the rendered prod stack (its outputs contract), for the loopback and
component tests: the Dynamo targets as backends, its SageMaker endpoints, and a same-model SageMaker
endpoint of the targets' model when prod has none yet (issue 15: prod's fallback becomes Lightning from
its Hugging Face checkpoint; until that lands, the test adds the endpoint that plan will produce)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from serving_stack.plan.gateway import DynamoBackend, GatewaySettings, SageMakerBackend
from stack_helpers import rendered_stack

# Loopback timings: the production router settings with short timeouts and cooldown, so each scenario
# ends in seconds. The scenarios' bounds are derived from these values.
LOOPBACK_TIMINGS = dict(timeout_seconds=3.0, stream_timeout_seconds=1.5, cooldown_seconds=10,
                        health_check_interval_seconds=2)
BACKEND_LATENCY_SECONDS = 0.3
REQUESTS, CONCURRENCY = 200, 8


@dataclass(frozen=True)
class ProdBackends:
    dynamo: tuple[DynamoBackend, ...]
    sagemaker: tuple[SageMakerBackend, ...]
    model: str  # the model the Dynamo targets serve
    same_model_endpoint: SageMakerBackend
    degraded_endpoint: SageMakerBackend  # a prod endpoint serving another model

    def settings(self, **overrides: object) -> GatewaySettings:
        fields: dict[str, object] = {"degraded_fallback_endpoint": self.degraded_endpoint.name, **overrides}
        return dataclasses.replace(GatewaySettings(), **fields)  # type: ignore[arg-type]


def prod_backends() -> ProdBackends:
    endpoints = rendered_stack("prod").outputs["endpoints"]
    dynamo = tuple(DynamoBackend(e["id"], e["servedModelName"], e["url"]) for e in endpoints if e["kind"] == "dynamo")
    sagemaker = [SageMakerBackend(e["id"], e["region"], e["servedModelName"]) for e in endpoints if e["kind"] == "sagemaker"]
    (model,) = {b.served_model_name for b in dynamo}
    assert len(dynamo) >= 2, "the failover scenarios need a model served by two or more Dynamo targets"
    degraded = next(e for e in sagemaker if e.served_model_name != model)
    same_model = next((e for e in sagemaker if e.served_model_name == model), None)
    if same_model is None:
        same_model = SageMakerBackend(f"{model.split('/')[-1].lower()}-hf"[:63], degraded.region, model)
        sagemaker.append(same_model)
    return ProdBackends(dynamo, tuple(sagemaker), model, same_model, degraded)
