"""From a validated config to what the program applies: rendered manifests and contract entries.

Plain data, computed before any resource is registered, so a bad catalog entry or setting fails first
and tests can check it without the Pulumi runtime.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from serving_stack.facts.catalog import Catalog, PlatformFile, Recipe
from serving_stack.config import StackConfig
from serving_stack.config.serving import TargetConfig
from serving_stack.plan.manifests import ServingSettings, gpus_used, render_target
from serving_stack.contract.outputs import ServingEndpoint, frontend_url
from serving_stack.plan.placement import place_target
from serving_stack.plan.pools import ResolvedPool, target_pools
from serving_stack.plan.prewarm import PrewarmPool, gate_workers, prewarm_pools


@dataclass(frozen=True)
class PlannedTarget:
    config: TargetConfig
    recipe: Recipe
    config_map: dict[str, Any]
    dgd: dict[str, Any]
    endpoint: ServingEndpoint

    @property
    def resource_name(self) -> str:
        return self.recipe.name


def serving_settings(config: StackConfig) -> ServingSettings:
    return ServingSettings(
        namespace=config.kubernetes.namespace,
        image_pull_secret=config.dynamo.imagePullSecret,
        registry=config.dynamo.runtime.registry,
        tag=config.dynamo.runtime.tag,
    )


def plan_targets(config: StackConfig, catalog: Catalog, pools: dict[str, ResolvedPool]) -> list[PlannedTarget]:
    settings = serving_settings(config)
    placements = target_pools(config, catalog, pools)
    planned = []
    for target in config.targets:
        recipe = catalog.recipe(target.id)
        config_map, dgd = render_target(recipe, target, settings)
        if target.id in placements:
            config_map, dgd = place_target(config_map, dgd, recipe, placements[target.id])
        prewarm = config.modelCache.prewarm
        if prewarm.enabled and prewarm.gateWorkers:
            gate_workers(dgd, prewarm)
        performance = recipe.entry.performance
        gpus = gpus_used(recipe, target)
        endpoint = ServingEndpoint(
            id=target.id,
            kind="dynamo",
            servedModelName=recipe.served_model_name,
            url=frontend_url(recipe.name, settings.namespace),
            gpus=gpus,
            expectedOutputTokensPerSecond=round(performance.outputTokensPerSecondPerGpu * gpus, 2),
            expectedTokensPerSecondPerUser=performance.tokensPerSecondPerUser,
            meetsPublishedCriteria=catalog.criteria.passed_by(performance),
        )
        planned.append(PlannedTarget(target, recipe, config_map, dgd, endpoint))
    return planned


def plan_prewarm(config: StackConfig, planned: list[PlannedTarget]) -> list[PrewarmPool]:
    if not config.modelCache.prewarm.enabled:
        return []
    return prewarm_pools([(p.dgd, p.recipe.checkpoints) for p in planned])


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overlay.items():
        merged[key] = _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def platform_chart(config: StackConfig, platform: PlatformFile) -> tuple[str, dict[str, Any]]:
    """The chart tarball URL at the pinned (or configured) version, and the merged values."""
    version = config.dynamo.platform.chartVersion or platform.chart.version
    return platform.chart.url.format(version=version), _merge(platform.values, config.dynamo.platform.values)
