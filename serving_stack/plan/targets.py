"""The selected catalog targets, resolved once: the recipe, the effective replicas of every component
(the recipe's own count unless the stack overrides it) and the GPUs those replicas use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from serving_stack.config.serving import TargetConfig
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.catalog import Catalog, Recipe


@dataclass(frozen=True)
class SelectedTarget:
    index: int
    config: TargetConfig
    recipe: Recipe
    replicas: Mapping[str, int]
    gpus: int

    @property
    def id(self) -> str:
        return self.recipe.id


def effective_replicas(recipe: Recipe, target: TargetConfig) -> Mapping[str, int]:
    return MappingProxyType({c["name"]: target.replicas.get(c["name"], c["replicas"]) for c in recipe.components})


def gpus_used(recipe: Recipe, replicas: Mapping[str, int]) -> int:
    return sum(replicas[c["name"]] * recipe.gpus_per_replica(c) for c in recipe.components)


def _check(selected: SelectedTarget, cached: set[str]) -> list[ConfigError]:
    errors: list[ConfigError] = []
    path, recipe, target = f"targets[{selected.index}]", selected.recipe, selected.config
    for component in target.replicas:
        if component not in recipe.component_names:
            errors.append(
                ConfigError(f"{path}.replicas.{component}", "no such component", ", ".join(recipe.component_names))
            )
    if recipe.disaggregated:
        for role in ("prefill", "decode"):
            name = next(c["name"] for c in recipe.components if c["type"] == role)
            if selected.replicas[name] < 1:
                errors.append(
                    ConfigError(
                        f"{path}.replicas.{name}",
                        f"a disaggregated target needs a prefill/decode pair, got 0 {role} replicas",
                        ">= 1",
                    )
                )
    for repo in recipe.checkpoints:
        if repo not in cached:
            errors.append(
                ConfigError(
                    "modelCache.checkpoints",
                    f"target {target.id!r} loads {repo!r}, which the model cache does not download",
                    "add it to modelCache.checkpoints.base or .drafts",
                )
            )
    return errors


def select_targets(
    config: StackConfig,
    catalog: Catalog,
    cached: set[str],
) -> tuple[list[SelectedTarget], list[ConfigError]]:
    """The targets the stack selects, and every problem with the selection (each naming its key);
    `cached` are the repos the model cache downloads (`plan.model_cache`)."""
    selected: list[SelectedTarget] = []
    errors: list[ConfigError] = []
    seen: set[str] = set()
    if isinstance(config.targets, str):  # `auto`: serving_stack.plan.auto_targets expands it first
        raise ValueError("targets: auto must be expanded into the planned targets before they are selected")
    for index, target in enumerate(config.targets):
        if target.id not in catalog.recipes:
            errors.append(
                ConfigError(f"targets[{index}].id", f"unknown target {bounded(target.id)}", ", ".join(catalog.recipes))
            )
            continue
        if target.id in seen:
            errors.append(ConfigError(f"targets[{index}].id", f"target {target.id!r} is selected twice"))
        seen.add(target.id)
        recipe = catalog.recipe(target.id)
        replicas = effective_replicas(recipe, target)
        one = SelectedTarget(index, target, recipe, replicas, gpus_used(recipe, replicas))
        errors += _check(one, cached)
        selected.append(one)
    return selected, errors
