"""The next `targets.yaml` (as data) from an upstream revision and the catalog it replaces.

Order is kept stable so a revision's diff shows only what changed: surviving targets stay where they
were (a renamed one takes its old place), new ones follow sorted by id; download Jobs likewise (the
first Job is the one `modelCache.checkpoints.base` defaults from).
"""

from __future__ import annotations

from typing import Any, Optional

import pydantic

from serving_stack.facts.catalog import Catalog, Recipe, TargetEntry, routing_of, speculative_decoding_of
from tools.absorb.changes import Manifests, TargetChanges, compare_targets
from tools.absorb.perf_table import FIGURES
from tools.absorb.provenance import Provenance
from tools.absorb.upstream import UpstreamError, UpstreamRevision

RECIPES_DIR = "recipes"
SCHEMA_VERSION = 2


def _figures(revision: UpstreamRevision, target_id: str) -> dict[str, Optional[float]]:
    row = revision.figures.get(target_id)
    figures = dict(row.figures) if row else dict.fromkeys(FIGURES)
    if figures["concurrency"] is not None:
        figures["concurrency"] = int(figures["concurrency"])
    return figures


def entry_of(revision: UpstreamRevision, target_id: str) -> dict[str, Any]:
    """The `targets.yaml` fields of a target besides its id: what the manifest says, and the table's row."""
    target = revision.targets[target_id]
    return {
        "manifest": f"{RECIPES_DIR}/{target.manifest}",
        "speculativeDecoding": speculative_decoding_of(target.config_map),
        "routing": routing_of(target.dgd),
        "performance": _figures(revision, target_id),
    }


def _recipe(revision: UpstreamRevision, target_id: str) -> Recipe:
    target = revision.targets[target_id]
    try:
        entry = TargetEntry.model_validate({"id": target_id, **entry_of(revision, target_id)})
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        raise UpstreamError(
            f"{target.manifest}: not a catalog target: {'.'.join(map(str, first['loc']))}: "
            f"{first['msg']} (got {first.get('input')!r})"
        ) from None
    return Recipe(entry, target.config_map, target.dgd)


def previous_manifests(catalog: Catalog) -> dict[str, Manifests]:
    return {
        target_id: Manifests(recipe, recipe.entry.model_dump(exclude={"id"}))
        for target_id, recipe in catalog.recipes.items()
    }


def next_manifests(revision: UpstreamRevision) -> dict[str, Manifests]:
    return {
        target_id: Manifests(_recipe(revision, target_id), entry_of(revision, target_id))
        for target_id in revision.targets
    }


def ordered_ids(previous: list[str], changes: TargetChanges, current: set[str]) -> list[str]:
    renamed = changes.new_id_of
    kept = [renamed.get(t, t) for t in previous if renamed.get(t, t) in current]
    return kept + sorted(current - set(kept))


def _benchmark_source(revision: UpstreamRevision, provenance: Provenance) -> str:
    files = sorted({row.source.rsplit(":", 1)[0] for row in revision.figures.values()})
    where = ", ".join(f"{RECIPES_DIR}/{f}" for f in files) or "no performance table"
    return f"{where} (upstream {provenance.repository} {provenance.path} at {provenance.commit})"


def next_catalog(
    revision: UpstreamRevision,
    previous: Catalog,
    provenance: Provenance,
) -> tuple[dict[str, Any], TargetChanges]:
    """The data of the next `targets.yaml`, and how its targets differ from `previous`."""
    changes = compare_targets(previous_manifests(previous), next_manifests(revision))
    ids = ordered_ids(list(previous.recipes), changes, set(revision.targets))
    previous_jobs = list(previous.data.modelCache.downloadJobs)
    jobs = [f"{RECIPES_DIR}/{path}" for path in revision.download_jobs]
    jobs = [j for j in previous_jobs if j in jobs] + sorted(set(jobs) - set(previous_jobs))
    data = {
        "schemaVersion": SCHEMA_VERSION,
        "upstream": {
            "repository": provenance.repository,
            "path": provenance.path,
            "commit": provenance.commit,
            "date": provenance.date,
        },
        "modelCache": {"claim": f"{RECIPES_DIR}/{revision.claim}", "downloadJobs": jobs},
        "benchmark": {"workload": previous.data.benchmark.workload, "source": _benchmark_source(revision, provenance)},
        "criteria": {**previous.criteria.model_dump(), **revision.criteria},
        "targets": [{"id": target_id, **entry_of(revision, target_id)} for target_id in ids],
    }
    return data, changes
