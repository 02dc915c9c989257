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
# Beside the page cache of the checkpoints it warms, a prewarm pod holds the Python interpreter and its
# read threads' buffers (well under 1 GiB); the rest is margin for a checkpoint a little larger than listed.
PREWARM_HEADROOM_GIB = 2


def _bytes(repositories: Iterable[str], sizes: CheckpointSizes) -> int:
    return sum(sizes.size(repository).bytes for repository in dict.fromkeys(repositories))


def prewarm_memory_limit(warmed: Iterable[str], sizes: CheckpointSizes) -> str:
    """A prewarm pod's memory limit when the stack sets none: the checkpoints it reads, plus headroom."""
    return f"{math.ceil(_bytes(warmed, sizes) / GIB) + PREWARM_HEADROOM_GIB}Gi"


def cache_size(upstream_size: str, downloaded: Iterable[str], sizes: CheckpointSizes) -> str:
    """The model cache's size when the stack sets none: upstream's claim, raised to hold every checkpoint
    the download Jobs fetch when upstream's is smaller."""
    needed = _bytes(downloaded, sizes)
    return upstream_size if quantity_value(upstream_size) >= needed else f"{math.ceil(needed / GIB)}Gi"


def _too_small(key: str, value: str, what: str, repositories: list[str], sizes: CheckpointSizes) -> list[ConfigError]:
    needed = _bytes(repositories, sizes)
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
    """The cache's size against every checkpoint downloaded; a configured `prewarm.memoryLimit` against the
    checkpoints the targets on one kind of node load (what one prewarm pod reads). Defaults are computed
    from the same sizes, so only a configured value can be too small."""
    errors = _too_small("modelCache.size", size, "the download Jobs fetch", list(dict.fromkeys(downloaded)), sizes)
    limit = cache.prewarm.memoryLimit
    if not cache.prewarm.enabled or limit is None:
        return errors
    for nodes, loaded in sorted(loaded_by_nodes.items()):
        warmed = list(dict.fromkeys(loaded))
        errors += _too_small(
            "modelCache.prewarm.memoryLimit",
            limit,
            f"a prewarm pod on {nodes} nodes reads",
            warmed,
            sizes,
        )
    return errors
