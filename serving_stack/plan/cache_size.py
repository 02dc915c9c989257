"""What must fit the checkpoints (sizes from catalog/checkpoints.yaml): the model-cache PVC holds every
checkpoint the download Job fetches, and a prewarm pod's memory limit holds the checkpoints it warms (page
cache is charged to the pod's cgroup: a smaller limit evicts what was just read)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from serving_stack.config.serving import ModelCacheConfig
from serving_stack.config.types import quantity_value
from serving_stack.errors import ConfigError
from serving_stack.facts.checkpoints import BYTES_PER_GB, CheckpointSizes

GIB = 2**30


def _too_small(key: str, value: str, what: str, repositories: list[str], sizes: CheckpointSizes) -> list[ConfigError]:
    needed = sum(sizes.size(repository).bytes for repository in repositories)
    if quantity_value(value) >= needed:
        return []
    estimated = sum(sizes.size(repository).estimate for repository in repositories)
    basis = f", {estimated} of them estimates" if estimated else ""
    problem = (
        f"{value} cannot hold the {len(repositories)} checkpoints {what}: {needed / BYTES_PER_GB:g} GB "
        f"(catalog/checkpoints.yaml{basis})"
    )
    return [ConfigError(key, problem, f">= {math.ceil(needed / GIB)}Gi")]


def check_checkpoint_room(
    cache: ModelCacheConfig,
    size: str,
    downloaded: Iterable[str],
    loaded_by_nodes: Mapping[str, Iterable[str]],
    sizes: CheckpointSizes,
) -> list[ConfigError]:
    """The cache's size (configured, or upstream's) against every checkpoint downloaded; `prewarm.memoryLimit`
    against the checkpoints the targets on one kind of node load (what one prewarm pod reads)."""
    errors = _too_small("modelCache.size", size, "the download Jobs fetch", list(dict.fromkeys(downloaded)), sizes)
    if not cache.prewarm.enabled:
        return errors
    for nodes, loaded in sorted(loaded_by_nodes.items()):
        warmed = list(dict.fromkeys(loaded))
        errors += _too_small(
            "modelCache.prewarm.memoryLimit",
            cache.prewarm.memoryLimit,
            f"a prewarm pod on {nodes} nodes reads",
            warmed,
            sizes,
        )
    return errors
