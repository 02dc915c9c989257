"""Which pool each selected target runs on, and whether it fits there.

A target runs on `targets[i].nodePool`, or on the only pool whose GPU is the target's. The pool must have
the target's GPU and architecture, a KV-transfer fabric for a disaggregated target, nodes big enough for
every worker pod, and room (maxSize nodes) for the GPUs of every target placed on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError
from serving_stack.facts.gpus import unknown_gpu_problem
from serving_stack.facts.instance_types import AwsCatalog
from serving_stack.plan.pools import ResolvedPool
from serving_stack.plan.targets import SelectedTarget


def _chosen_pool(
    target: SelectedTarget, pools: Mapping[str, ResolvedPool], gpu: Optional[str]
) -> tuple[Optional[str], Optional[ConfigError]]:
    path, wanted = f"targets[{target.index}].nodePool", target.config.nodePool
    if wanted is not None:
        if wanted not in pools:
            return None, ConfigError(
                path, f"unknown node pool {wanted!r}", ", ".join(pools) or "none defined in aws.nodePools"
            )
        return wanted, None
    if not pools:
        return None, None
    candidates = [name for name, pool in pools.items() if pool.gpu == gpu]
    if len(candidates) != 1:
        problem = f"no pool has {gpu} GPUs" if not candidates else f"several pools have {gpu} GPUs"
        return None, ConfigError(path, f"{problem} for {target.id!r}; name one", ", ".join(candidates or pools))
    return candidates[0], None


def _fit(target: SelectedTarget, pool: ResolvedPool, gpu: Optional[str], arch: Optional[str]) -> list[ConfigError]:
    errors: list[ConfigError] = []
    path, recipe, name = f"targets[{target.index}].nodePool", target.recipe, pool.name
    if gpu != pool.gpu:
        errors.append(ConfigError(path, f"{target.id!r} needs {gpu} GPUs; pool {name!r} has {pool.gpu}"))
    if arch and pool.arch != arch:
        errors.append(ConfigError(path, f"{target.id!r} needs {arch} nodes; pool {name!r} is {pool.arch}"))
    if recipe.disaggregated and pool.fabric == "none":
        errors.append(
            ConfigError(
                path,
                f"disaggregated {target.id!r} needs a KV-transfer fabric; pool {name!r} has none",
                "a pool with fabric efa or ib",
            )
        )
    for component in recipe.worker_components():
        if recipe.gpus_per_replica(component) > pool.gpus_per_node:
            errors.append(
                ConfigError(
                    path,
                    f"{component['name']} asks {recipe.gpus_per_replica(component)} GPUs per pod; "
                    f"a node of pool {name!r} holds {pool.gpus_per_node}",
                )
            )
    return errors


def place_targets(
    config: StackConfig,
    targets: list[SelectedTarget],
    pools: Mapping[str, ResolvedPool],
    aws_catalog: AwsCatalog,
) -> tuple[dict[str, ResolvedPool], list[ConfigError]]:
    """Target id -> its pool (unplaced targets are absent), and every placement problem."""
    if config.aws is None:
        return {}, [
            ConfigError(f"targets[{t.index}].nodePool", "no aws.nodePools are defined")
            for t in targets
            if t.config.nodePool
        ]
    placed: dict[str, ResolvedPool] = {}
    errors: list[ConfigError] = []
    gpus_on: dict[str, int] = {}
    for target in targets:
        gpu = aws_catalog.gpu_of_product(target.recipe.gpu_products[0])
        if gpu is None:
            if pools or target.config.nodePool:  # a stack without pools places nothing: it need not know the GPU
                problem = unknown_gpu_problem(target.recipe.gpu_products[0])
                errors.append(ConfigError(f"targets[{target.index}].id", f"{target.id!r} cannot be placed: {problem}"))
            continue
        name, error = _chosen_pool(target, pools, gpu)
        errors += [error] if error else []
        if name is None:
            continue
        pool = pools[name]
        errors += _fit(target, pool, gpu, aws_catalog.gpus[gpu].arch)
        placed[target.id] = pool
        gpus_on[name] = gpus_on.get(name, 0) + target.gpus
    for index, pool in enumerate(pools.values()):
        used = gpus_on.get(pool.name, 0)
        if used > pool.max_size * pool.gpus_per_node:
            errors.append(
                ConfigError(
                    f"aws.nodePools[{index}].maxSize",
                    f"targets on pool {pool.name!r} use {used} GPUs, "
                    f"more than {pool.max_size} nodes x {pool.gpus_per_node} GPUs",
                )
            )
    return placed, errors
