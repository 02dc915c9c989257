"""The stack plan's cross-field checks: every problem the facts reveal in a config, in one `ConfigError`.

`stack_plan.build_plan` runs them first, so it plans only a config that is sound.
"""

from __future__ import annotations

from typing import Optional

from serving_stack.config.secrets import missing_secrets
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError
from serving_stack.facts import Facts
from serving_stack.plan.cache_size import check_checkpoint_room
from serving_stack.plan.cluster_checks import check_cluster
from serving_stack.plan.gateway_stack import check_gateway
from serving_stack.plan.model_cache import loaded_checkpoints, select_model_cache
from serving_stack.plan.name_checks import check_names
from serving_stack.plan.placement import place_targets
from serving_stack.plan.pool_checks import check_pools
from serving_stack.plan.pools import resolve_pools
from serving_stack.plan.sagemaker_checks import check_sagemaker
from serving_stack.plan.stack_region import check_stack_region
from serving_stack.plan.storage import check_storage
from serving_stack.plan.targets import select_targets


def check_stack(config: StackConfig, facts: Facts, secrets: frozenset[str], default_region: Optional[str]) -> None:
    """Every problem the facts reveal, in one `ConfigError`; nothing when the config is sound."""
    loaded = loaded_checkpoints(config.targets, facts.catalog)
    cache, errors = select_model_cache(config.modelCache, facts.catalog.model_cache, loaded)
    selected, target_errors = select_targets(config, facts.catalog, cache.repos)
    errors += target_errors
    by_nodes: dict[str, list[str]] = {}  # prewarm DaemonSets follow the workers' nodes (pool or GPU product)
    for target in selected:
        nodes = target.config.nodePool or target.recipe.gpu_products[0]
        by_nodes.setdefault(nodes, []).extend(target.recipe.checkpoints)
    errors += check_checkpoint_room(config.modelCache, cache.size, cache.repos, by_nodes, facts.checkpoints)
    errors += check_stack_region(config, default_region, facts.aws.regions)
    unknown_gpus = config.demand.unknown_gpu_types(list(facts.aws.gpus)) if config.demand else []
    if unknown_gpus:  # with explicit targets too: the capacity summary reads the demand
        errors.append(
            ConfigError("demand.gpuTypes", f"unknown GPU type(s) {', '.join(unknown_gpus)}", ", ".join(facts.aws.gpus))
        )
    errors += missing_secrets(config, secrets)
    errors += check_sagemaker(config.sagemaker, facts)
    errors += check_gateway(config)
    errors += check_names(config, facts)
    aws = config.aws
    if aws is None:
        if config.kubernetes.cluster.source == "eks":
            errors.append(ConfigError("aws", "required when kubernetes.cluster.source is eks"))
        errors += place_targets(config, selected, {}, facts.aws)[1]
    else:
        aws_errors = (
            check_cluster(config, aws, facts)
            + check_pools(aws, facts.aws)
            + check_storage(config, aws, cache.size, facts.aws.regions)
        )
        errors += aws_errors or place_targets(config, selected, resolve_pools(config, facts), facts.aws)[1]
    if errors:
        raise ConfigError.combined(errors)
