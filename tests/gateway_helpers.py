"""Gateway inputs of the failover scenarios: a stack built for them from prod's file (its cluster, pools,
SageMaker endpoint and gateway block), whose Dynamo targets are two or more catalog targets serving the
model of prod's same-model SageMaker endpoint (prod's own when it has them). The scenarios never depend
on which targets prod selects today."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from catalog_picks import gpu_of, gpu_of_instance
from gateway_loopback.stack_backends import (
    StackBackends,
    stack_backends,
)
from stack_helpers import run_config, stack_file_config

from serving_stack.config import parse_stack_config
from serving_stack.facts.catalog import load_catalog

ScenarioBackends = StackBackends
MIN_TARGETS = 2


def failover_config() -> dict[str, Any]:
    """prod's config with targets that serve one model twice or more: prod's targets serving the model of
    its SageMaker endpoints, topped up with aggregated catalog targets of that model on prod's pool GPUs."""
    raw = stack_file_config("prod")
    catalog = load_catalog()
    endpoint_models = Counter(
        e["huggingface"]["repo"] for e in raw["sagemaker"]["endpoints"] if e.get("source") == "huggingface"
    )
    (model, _), *_ = endpoint_models.most_common()
    targets = [t for t in raw["targets"] if catalog.recipe(t["id"]).served_model_name == model]
    pool_gpus = {gpu_of_instance(p["instanceType"]) for p in raw["aws"]["nodePools"]}
    extra = [
        {"id": r.id}
        for r in catalog.recipes.values()
        if r.served_model_name == model
        and not r.disaggregated
        and gpu_of(r) in pool_gpus
        and r.id not in {t["id"] for t in targets}
    ]
    targets += extra[: max(0, MIN_TARGETS - len(targets))]
    assert len(targets) >= MIN_TARGETS, f"the catalog has fewer than {MIN_TARGETS} targets of {model} on prod's GPUs"
    return {**raw, "targets": targets}


@functools.cache
def failover_run():
    return run_config(failover_config(), stack="prod")


def scenario_backends() -> StackBackends:
    """The failover stack's backends and its `gateway` settings."""
    config = failover_config()
    return stack_backends(failover_run().outputs, parse_stack_config(config).gateway)
