"""The model cache as this stack runs it: upstream's claim and download Jobs, with what the stack config
changes (size, which checkpoints), resolved once.

Checkpoints keep upstream's env names and stay in the Job that fetches them upstream. A repo the stack
adds that no upstream Job fetches goes into the first Job under a name derived from the base
(`<base>-Foo` -> `FOO_MODEL`). A Job left with no checkpoint is not run.

With `modelCache.checkpoints` unset, the Jobs follow the selected targets: every upstream Job that fetches
a checkpoint some selected target loads runs as upstream wrote it, and a Job for checkpoints no selected
target loads (a revision's new BF16 set, say) is not run; a stack selecting no target runs them all.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Optional, Union

from serving_stack.config.serving import ModelCacheConfig, TargetConfig
from serving_stack.errors import ConfigError
from serving_stack.facts.catalog import Catalog
from serving_stack.facts.model_cache import DownloadJob, ModelCacheFacts

KEY = "modelCache.checkpoints"


@dataclass(frozen=True)
class JobCheckpoints:
    """One download Job and the (env name, repo) pairs it fetches in this stack."""

    job: DownloadJob
    checkpoints: tuple[tuple[str, str], ...]

    @property
    def changed(self) -> bool:
        return self.checkpoints != self.job.checkpoints

    @property
    def env_names(self) -> list[str]:
        return [name for name, _ in self.checkpoints]


@dataclass(frozen=True)
class ModelCacheSelection:
    size: str
    jobs: tuple[JobCheckpoints, ...]

    @property
    def repos(self) -> set[str]:
        return {repo for job in self.jobs for _, repo in job.checkpoints}


def env_name_tuple(names: list[str]) -> str:
    """A Python tuple literal of env names, as upstream's download script loops over them."""
    return "(" + ", ".join(f'"{n}"' for n in names) + ("," if len(names) == 1 else "") + ")"


def env_tuple_pattern(names: list[str]) -> re.Pattern[str]:
    """Upstream's loop tuple (`("BASE_MODEL", "DFLASH_MODEL")`), whatever its spacing or trailing comma."""
    items = r"\s*,\s*".join(rf"[\"']{re.escape(n)}[\"']" for n in names)
    return re.compile(rf"\(\s*{items}\s*,?\s*\)")


def _derived_env_name(repo: str, base: str, taken: set[str]) -> str:
    suffix = repo[len(base) + 1 :] if repo.startswith(base + "-") else repo.rsplit("/", 1)[-1]
    stem = re.sub(r"[^A-Z0-9]+", "_", suffix.upper()).strip("_") + "_MODEL"
    name, counter = stem, 2
    while name in taken:
        name, counter = f"{stem}_{counter}", counter + 1
    return name


def _wanted(cache: ModelCacheConfig, facts: ModelCacheFacts) -> Optional[list[str]]:
    """The repos the stack asks for, or None for upstream's Jobs unchanged."""
    wanted = cache.checkpoints
    if wanted.base is None and wanted.drafts is None:
        return None
    primary = facts.jobs[0].repos
    base = wanted.base if wanted.base is not None else primary[0]
    drafts = wanted.drafts if wanted.drafts is not None else primary[1:]
    return list(dict.fromkeys([base, *drafts]))


def loaded_checkpoints(targets: Union[str, Iterable[TargetConfig]], catalog: Catalog) -> set[str]:
    """The repos the selected targets load (none for `auto` not yet expanded; ids the catalog does not hold
    are left to the target checks)."""
    if isinstance(targets, str):
        return set()
    known = set(catalog.selectable)
    return {repo for t in targets if t.id in known for repo in catalog.recipe(t.id).checkpoints}


def select_model_cache(
    cache: ModelCacheConfig,
    facts: ModelCacheFacts,
    loaded: Collection[str] = (),
) -> tuple[ModelCacheSelection, list[ConfigError]]:
    """What each download Job fetches, and every checkpoint change the upstream script cannot take;
    `loaded` are the repos the selected targets load (`loaded_checkpoints`)."""
    size = cache.size if cache.size is not None else facts.size
    wanted = _wanted(cache, facts)
    if wanted is None:
        used = [job for job in facts.jobs if any(repo in loaded for repo in job.repos)]
        jobs = tuple(JobCheckpoints(job, job.checkpoints) for job in (used or facts.jobs))
        return ModelCacheSelection(size, jobs), []
    kept = [JobCheckpoints(job, tuple((n, r) for n, r in job.checkpoints if r in wanted)) for job in facts.jobs]
    fetched = {repo for job in kept for _, repo in job.checkpoints}
    taken = {name for job in facts.jobs for name, _ in job.checkpoints}
    added: list[tuple[str, str]] = []
    for repo in (r for r in wanted if r not in fetched):
        name = _derived_env_name(repo, wanted[0], taken)
        taken.add(name)
        added.append((name, repo))
    kept[0] = JobCheckpoints(kept[0].job, kept[0].checkpoints + tuple(added))
    jobs = tuple(job for job in kept if job.checkpoints)
    errors: list[ConfigError] = []
    for job in (j for j in jobs if j.changed):
        upstream = [name for name, _ in job.job.checkpoints]
        if not env_tuple_pattern(upstream).search(job.job.script):
            errors.append(
                ConfigError(
                    KEY,
                    f"download Job {job.job.name!r} ({job.job.path}) does not list its env "
                    f"names as {env_name_tuple(upstream)} in its script, so the stack cannot "
                    "change what it fetches",
                    "leave modelCache.checkpoints unset for this revision",
                )
            )
    return ModelCacheSelection(size, jobs), errors
