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


def swap_refusal(previous_ids: list[str], current_ids: list[str], catalog: Catalog, surge: bool) -> ConfigError | None:
    """A change of targets that one `pulumi up` cannot finish, or None.

    The engine deletes the targets a program no longer declares only after every create and update of the
    same `up` has finished, and a new DGD's create returns only once it is Ready. A new target that needs the
    GPUs a removed one still holds therefore waits for them until its timeout (and again on every retry):
    on fixed-size pools the swap has to be two `up`s. `surge` (`dynamo.targetSwap: surge`) says the pools
    have room for both while the new one starts. A removed target the catalog no longer has counts as
    holding every GPU kind."""
    if surge:
        return None
    removed = [i for i in previous_ids if i not in current_ids]
    if not removed:
        return None

    def gpus(target_id: str) -> set[str]:
        return set(catalog.recipe(target_id).gpu_products) if target_id in catalog.recipes else {"*"}

    held = {p for i in removed for p in gpus(i)}
    waiting = [i for i in current_ids if i not in previous_ids and ("*" in held or "*" in gpus(i) or held & gpus(i))]
    if not waiting:
        return None
    kept = [i for i in previous_ids if i in current_ids]
    step_one = ", ".join(kept) if kept else "no targets"
    return ConfigError(
        "targets",
        f"replacing {', '.join(removed)} with {', '.join(waiting)} on the same GPUs cannot finish in one "
        "`pulumi up` (the engine deletes removed targets only after the new ones are Ready, and they need the "
        "GPUs the old ones hold)",
        f"two `pulumi up`s: first with {step_one} (the old target removed), then add {', '.join(waiting)}; "
        "or dynamo.targetSwap: surge when the pools have room for both",
    )


def deployed_dynamo_targets(endpoints: object) -> list[str]:
    """The Dynamo target ids of a deployment's `endpoints` output (none before the first `up`)."""
    if not isinstance(endpoints, list):
        return []
    return [str(e["id"]) for e in endpoints if isinstance(e, dict) and e.get("kind") == "dynamo" and "id" in e]


def check_target_swap(previous_ids: list[str], current_ids: list[str], catalog: Catalog, surge: bool) -> bool:
    """Raises `swap_refusal`'s error; True when the change of targets can finish in one `up`."""
    refusal = swap_refusal(previous_ids, current_ids, catalog, surge)
    if refusal is not None:
        raise refusal
    return True
