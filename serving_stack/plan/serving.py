"""From the selected targets to what the program applies: rendered manifests and contract entries.

Plain data, computed before any resource is registered, so a bad catalog entry or setting fails first
and tests can check it without the Pulumi runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.config.stack import StackConfig
from serving_stack.contract.outputs import ServingEndpoint, frontend_url
from serving_stack.errors import ConfigError
from serving_stack.facts import Facts
from serving_stack.facts.catalog import Criteria, PlatformFile
from serving_stack.facts.checkpoints import CheckpointSizes
from serving_stack.facts.instance_types import FabricProfile
from serving_stack.plan.cache_size import prewarm_memory_limit
from serving_stack.plan.manifests import (
    ServingSettings,
    await_ready,
    render_target,
    stamp_config_checksum,
    startup_budget_seconds,
)
from serving_stack.plan.pinning import place_target
from serving_stack.plan.pools import ResolvedPool
from serving_stack.plan.prewarm import PROGRAM_FILE, PrewarmPool, gate_workers, host_state_dir, prewarm_pools
from serving_stack.plan.targets import SelectedTarget


@dataclass(frozen=True)
class PlannedTarget:
    """`ignored_replica_paths`: the DGD's replica fields an autoscaler owns (`serving_stack.plan.stack_scaling`)."""

    selected: SelectedTarget
    pool: Optional[ResolvedPool]
    config_map: dict[str, Any]
    dgd: dict[str, Any]
    endpoint: ServingEndpoint
    delete_timeout_seconds: int
    ignored_replica_paths: tuple[str, ...] = ()

    @property
    def resource_name(self) -> str:
        return self.selected.recipe.name


def serving_settings(config: StackConfig) -> ServingSettings:
    return ServingSettings(
        namespace=config.kubernetes.namespace,
        image_pull_secret=config.dynamo.imagePullSecret,
        registry=config.dynamo.runtime.registry,
        tag=config.dynamo.runtime.tag,
    )


def _endpoint(target: SelectedTarget, criteria: Criteria, namespace: str) -> ServingEndpoint:
    """Figures upstream did not publish stay None (the contract's null), and so does a verdict they decide."""
    performance = target.recipe.entry.performance
    per_gpu = performance.outputTokensPerSecondPerGpu
    return ServingEndpoint(
        id=target.id,
        kind="dynamo",
        servedModelName=target.recipe.served_model_name,
        url=frontend_url(target.recipe.name, namespace),
        gpus=target.gpus,
        expectedOutputTokensPerSecond=None if per_gpu is None else round(per_gpu * target.gpus, 2),
        expectedTokensPerSecondPerUser=performance.tokensPerSecondPerUser,
        meetsPublishedCriteria=criteria.passed_by(performance),
    )


def plan_targets(
    config: StackConfig,
    selected: list[SelectedTarget],
    placements: Mapping[str, ResolvedPool],
    fabrics: Mapping[str, FabricProfile],
    criteria: Criteria,
    platform: PlatformFile,
    prewarm_program: str,
) -> list[PlannedTarget]:
    settings = serving_settings(config)
    prewarm, readiness = config.modelCache.prewarm, config.dynamo.readiness
    planned = []
    for target in selected:
        config_map, dgd = render_target(target.recipe, target.replicas, target.config.image, settings)
        pool = placements.get(target.id)
        if pool is not None:
            config_map, dgd = place_target(config_map, dgd, target.recipe, pool, fabrics)
        gated = prewarm.enabled and prewarm.gateWorkers
        if gated:
            gate_workers(dgd, prewarm.waitTimeoutSeconds, host_state_dir(settings.namespace))
        stamp_config_checksum(dgd, config_map.get("data", {}), {"prewarm.py": prewarm_program} if gated else {})
        if readiness.wait:
            # Everything before a worker is Ready, in order: the image pull, the prewarm gate (an init
            # container that waits up to its timeout), then the startupProbe's own budget.
            gate = prewarm.waitTimeoutSeconds if gated else 0
            budget = platform.readiness.imagePullAllowanceSeconds + gate + startup_budget_seconds(dgd)
            if readiness.timeoutSeconds is not None and readiness.timeoutSeconds < budget:
                raise ConfigError(
                    "dynamo.readiness.timeoutSeconds",
                    f"{readiness.timeoutSeconds} s would expire before "
                    f"{target.id!r} may be ready: the image pull allowance, the prewarm gate "
                    f"(modelCache.prewarm.waitTimeoutSeconds) and its startupProbe budget add up to {budget} s",
                    f">= {budget}, or unset",
                )
            await_ready(dgd, readiness.timeoutSeconds or budget)
        endpoint = _endpoint(target, criteria, settings.namespace)
        planned.append(PlannedTarget(target, pool, config_map, dgd, endpoint, config.dynamo.deleteTimeoutSeconds))
    return planned


def plan_prewarm(config: StackConfig, planned: list[PlannedTarget], sizes: CheckpointSizes) -> list[PrewarmPool]:
    """The DaemonSets; each one's memory limit is the configured one, else computed from what it warms."""
    prewarm = config.modelCache.prewarm
    if not prewarm.enabled:
        return []
    configured = prewarm.memoryLimit
    return prewarm_pools(
        [(p.dgd, p.selected.recipe.checkpoints) for p in planned],
        lambda warmed: configured if configured is not None else prewarm_memory_limit(warmed, sizes),
    )


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overlay.items():
        nested = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if nested else value
    return merged


def platform_chart(config: StackConfig, platform: PlatformFile) -> tuple[str, dict[str, Any]]:
    """The chart tarball URL at the pinned (or configured) version, and the merged values."""
    version = config.dynamo.platform.chartVersion or platform.chart.version
    return platform.chart.url.format(version=version), _merge(platform.values, config.dynamo.platform.values)


def plan_serving_targets(
    config: StackConfig, selected: list[SelectedTarget], placements: Mapping[str, ResolvedPool], facts: Facts
) -> list[PlannedTarget]:
    fabrics: dict[str, FabricProfile] = dict(facts.aws.fabrics.items())
    return plan_targets(
        config,
        selected,
        placements,
        fabrics,
        facts.catalog.criteria,
        facts.platform,
        PROGRAM_FILE.read_text(),
    )
