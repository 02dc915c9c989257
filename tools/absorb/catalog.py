"""The next `catalog/targets.yaml`, as data and as the text `make absorb` writes (a function of the data alone,
so absorbing the same revision twice writes the same bytes), from an upstream revision and the catalog it
replaces.

Order is kept stable so a revision's diff shows only what changed: surviving targets stay where they were (a
renamed one takes its old place), new ones follow sorted by id; download Jobs likewise (the first Job is the
one `modelCache.checkpoints.base` defaults from). A target the revision removes or renames is retired, not
deleted: its entry moves to `retired:` with the revision that dropped it and its successor, and its manifest
stays under `retired/<last commit it was in>/` so a stack selecting it renders as before. A retired target
leaves the catalog only when upstream brings its id back or when it is dropped on purpose (`--drop-retired`,
refused while a committed stack selects it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

import pydantic
import yaml

from serving_stack.facts.catalog import UNKNOWN, Catalog, Recipe, TargetEntry, routing_of, speculative_decoding_of
from tools.absorb.changes import Manifests, TargetChanges, closest, compare_targets
from tools.absorb.upstream import FIGURES, Upstream, UpstreamError, UpstreamRevision

RECIPES_DIR = "recipes"
RETIRED_DIR = "retired"
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
        "speculativeDecoding": speculative_decoding_of(target.config_map, f"{target.manifest} ConfigMap"),
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


def retired_manifest(manifest: str, last_commit: str) -> str:
    """`recipes/vllm/x/deploy.yaml` of revision `c` kept as `retired/c/vllm/x/deploy.yaml`."""
    return f"{RETIRED_DIR}/{last_commit}/{manifest.removeprefix(RECIPES_DIR + '/')}"


def retired_entries(
    previous: Catalog,
    changes: TargetChanges,
    provenance: Upstream,
    current: Mapping[str, Manifests],
    dropped: frozenset[str],
) -> list[dict[str, Any]]:
    """The next `retired:` list: the previous one (minus ids upstream brought back and the ones dropped,
    successors following a rename), then the targets this revision removes or renames."""
    renamed = changes.new_id_of

    def follow(target_id: Optional[str]) -> Optional[str]:
        return renamed.get(target_id, target_id) if target_id else None

    kept = [
        {
            **old.recipe.entry.model_dump(exclude={"retired"}),
            "retired": {
                **old.retirement.model_dump(),
                "successor": follow(old.retirement.successor),
                "closest": follow(old.retirement.closest),
            },
        }
        for target_id, old in previous.retired.items()
        if target_id not in current and target_id not in dropped
    ]
    before = previous_manifests(previous)
    last_commit = previous.data.upstream.commit
    retiring = [*changes.removed, *renamed]
    new = []
    for target_id in retiring:
        entry = previous.recipes[target_id].entry.model_dump()
        successor = renamed.get(target_id)
        new.append(
            {
                **entry,
                "manifest": retired_manifest(entry["manifest"], last_commit),
                "retired": {
                    "commit": provenance.commit,
                    "date": provenance.date,
                    "lastCommit": last_commit,
                    "successor": successor,
                    "closest": None if successor or not current else closest(before[target_id], current)[0],
                },
            }
        )
    return kept + sorted(new, key=lambda e: e["id"])


def _benchmark_source(revision: UpstreamRevision, provenance: Upstream) -> str:
    files = sorted({row.source.rsplit(":", 1)[0] for row in revision.figures.values()})
    where = ", ".join(f"{RECIPES_DIR}/{f}" for f in files) or "no performance table"
    return f"{where} (upstream {provenance.repository} {provenance.path} at {provenance.commit})"


def next_catalog(
    revision: UpstreamRevision,
    previous: Catalog,
    provenance: Upstream,
    dropped: frozenset[str] = frozenset(),
) -> tuple[dict[str, Any], TargetChanges]:
    """The data of the next `targets.yaml`, and how its targets differ from `previous`; `dropped` are retired
    targets to leave out."""
    current = next_manifests(revision)
    changes = compare_targets(previous_manifests(previous), current)
    ids = ordered_ids(list(previous.recipes), changes, set(revision.targets))
    previous_jobs = list(previous.data.modelCache.downloadJobs)
    jobs = [f"{RECIPES_DIR}/{path}" for path in revision.download_jobs]
    jobs = [j for j in previous_jobs if j in jobs] + sorted(set(jobs) - set(previous_jobs))
    data = {
        "schemaVersion": SCHEMA_VERSION,
        "upstream": provenance.model_dump(),
        "modelCache": {"claim": f"{RECIPES_DIR}/{revision.claim}", "downloadJobs": jobs},
        "benchmark": {"workload": previous.data.benchmark.workload, "source": _benchmark_source(revision, provenance)},
        "criteria": {**previous.criteria.model_dump(), **revision.criteria},
        "targets": [{"id": target_id, **entry_of(revision, target_id)} for target_id in ids],
        "retired": retired_entries(previous, changes, provenance, current, dropped),
    }
    return data, changes


HEADER = """\
# Serving-target catalog for NVIDIA Nemotron 3.5 Lightning on Dynamo. Written by `make absorb`
# (tools/absorb, docs/absorb.md) from the upstream recipe directory vendored verbatim under recipes/:
# do not edit by hand; absorb the next upstream revision instead.
# - targets: one per upstream manifest holding a DynamoGraphDeployment (id: its directory).
#   speculativeDecoding and routing are read from the manifest (the catalog checks they agree);
#   performance is the upstream performance table's row, each figure `unknown` where upstream
#   publishes none (summary and outputs show n/a, and the criteria verdict stays unknown);
#   syntheticAcceptanceLength is the fixed acceptance length a speculative row was measured with
#   (`unknown` also for a row without speculative decoding).
# - modelCache: upstream's claim and download Jobs; their size, checkpoints and env names are what a
#   stack gets unless it sets modelCache.size / modelCache.checkpoints.
# - retired: targets an absorbed revision removed or renamed, still selectable from their last
#   revision's manifest (retired/<lastCommit>/); a stack selecting one gets a warning naming the
#   successor. Dropped only with `make absorb ... DROP_RETIRED=<id>` when no stack selects it.
"""
RETIREMENT_FIELDS = ("commit", "date", "lastCommit", "successor", "closest")


def _scalar(value: Any) -> str:
    if value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    text = str(value)
    try:
        plain = bool(text) and "#" not in text and yaml.safe_load(text) == text  # reads back as the same string
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text)


def performance_line(figures: dict[str, Optional[float]]) -> str:
    return "{" + ", ".join(f"{key}: {_scalar(figures.get(key))}" for key in FIGURES) + "}"


def targets_yaml(data: dict[str, Any]) -> str:
    """`data` has the keys of `serving_stack.facts.catalog.CatalogFile`."""
    upstream, cache, benchmark, criteria = data["upstream"], data["modelCache"], data["benchmark"], data["criteria"]
    lines = [
        HEADER.rstrip("\n"),
        f"schemaVersion: {data['schemaVersion']}",
        "upstream:",
        *(
            f"  {key}: {_scalar(upstream[key]) if key != 'date' else json.dumps(upstream[key])}"
            for key in ("repository", "path", "commit", "date")
        ),
        "modelCache:",
        f"  claim: {_scalar(cache['claim'])}",
        "  downloadJobs:",
        *(f"    - {_scalar(path)}" for path in cache["downloadJobs"]),
        "benchmark:",
        f"  workload: {_scalar(benchmark['workload'])}",
        f"  source: {_scalar(benchmark['source'])}",
        "criteria:",
        f"  minTokensPerSecondPerUser: {_scalar(criteria['minTokensPerSecondPerUser'])}",
        f"  maxTtftP50Ms: {_scalar(criteria['maxTtftP50Ms'])}",
        "targets:",
    ]
    lines += _entries(data["targets"])
    if data.get("retired"):
        lines += ["retired:", *_entries(data["retired"])]
    return "\n".join(lines) + "\n"


def _entries(targets: list[dict[str, Any]]) -> list[str]:
    lines = []
    for target in targets:
        lines += [
            f"  - id: {_scalar(target['id'])}",
            f"    manifest: {_scalar(target['manifest'])}",
            f"    speculativeDecoding: {_scalar(target['speculativeDecoding'])}",
            f"    routing: {_scalar(target['routing'])}",
            f"    performance: {performance_line(target['performance'])}",
        ]
        if "retired" in target:
            lines.append(f"    retired: {_retirement_line(target['retired'])}")
    return lines


def _retirement_line(retired: dict[str, Any]) -> str:
    def value(key: str) -> str:
        if retired.get(key) is None:
            return "null"
        return json.dumps(retired[key]) if key == "date" else _scalar(retired[key])

    return "{" + ", ".join(f"{key}: {value(key)}" for key in RETIREMENT_FIELDS) + "}"
