"""`make absorb UPSTREAM=<recipes/nemotron-3.5-lightning dir> COMMIT=<sha> [DATE=YYYY-MM-DD]`.

Vendors the upstream directory verbatim into `catalog/recipes/`, writes `catalog/targets.yaml` from it
and prints what changed. Everything is staged in a temporary copy of the catalog first: a revision
that does not load (an unsupported manifest, a table cell that is not a figure) writes nothing.
Targets the revision removes or renames are retired (kept selectable under `catalog/retired/`); the
report lists the stacks that select one. `--drop-retired ID` leaves a retired target out, refused
while a committed stack selects it. Stack files are read with the program's strict reader: one that
cannot be read stops the absorb with one line naming it.
Exit status: 0 absorbed (or no change), 1 absorbed but some target does not conform, 2 not absorbed.
The catalog directory is the one the stack reads (`NEMOTRON_CATALOG_DIR` if set, else `catalog/`).
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from serving_stack.errors import ConfigError
from serving_stack.facts import Facts, load_facts
from serving_stack.facts.catalog import TARGETS_FILE, Catalog, CheckpointSizes, Upstream, load_catalog
from serving_stack.facts.strict_files import DATA_DIR
from tools.absorb.catalog import (
    RECIPES_DIR,
    RETIRED_DIR,
    next_catalog,
    next_manifests,
    previous_manifests,
    targets_yaml,
)
from tools.absorb.changes import (
    StackSelections,
    TargetChanges,
    broken_selections,
    model_cache_changes,
    read_stacks,
    retired_selections,
)
from tools.absorb.upstream import (
    ProvenanceError,
    TableError,
    UpstreamError,
    UpstreamRevision,
    read_upstream,
    resolve,
)
from tools.conformance import planned_conformance

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _file_changes(staged: Path, current: Path) -> list[str]:
    """Vendored files added, removed or changed (`+ perf/README.md`, `- x.yaml`, `~ y.yaml`)."""
    new = {p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()} if staged.is_dir() else set()
    old = {p.relative_to(current).as_posix() for p in current.rglob("*") if p.is_file()} if current.is_dir() else set()
    return (
        [f"+ {f}" for f in sorted(new - old)]
        + [f"- {f}" for f in sorted(old - new)]
        + [f"~ {f}" for f in sorted(new & old) if not filecmp.cmp(staged / f, current / f, shallow=False)]
    )


def _swap_in(staging: Path, root: Path, directory: str) -> None:
    """Swap a staged directory in by rename (never a half-copied tree); a directory not staged is removed."""
    incoming, outgoing = root / f".{directory}.incoming", root / f".{directory}.outgoing"
    for leftover in (incoming, outgoing):
        shutil.rmtree(leftover, ignore_errors=True)
    if (staging / directory).is_dir():
        shutil.copytree(staging / directory, incoming)
    if (root / directory).exists():
        (root / directory).rename(outgoing)
    if incoming.is_dir():
        incoming.rename(root / directory)
    shutil.rmtree(outgoing, ignore_errors=True)


def _stage_retired(data: dict[str, Any], previous: Catalog, root: Path, staging: Path) -> None:
    """Every retired entry's manifest under `staging/retired/`: a kept one from where it was, a newly retired
    one from the `recipes/` it leaves."""
    for entry in data["retired"]:
        was = previous.retired.get(entry["id"])
        source = root / (was.recipe.entry.manifest if was else previous.recipes[entry["id"]].entry.manifest)
        (staging / entry["manifest"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, staging / entry["manifest"])


def _check_drops(dropped: frozenset[str], previous: Catalog, stacks: StackSelections) -> None:
    """A retired target leaves the catalog only when it is retired and no committed stack selects it."""
    for target_id in sorted(dropped):
        if target_id not in previous.retired:
            raise ConfigError(
                "--drop-retired", f"{target_id!r} is not a retired target", ", ".join(previous.retired) or "none"
            )
        users = [s for s in stacks.selections if s.target_id == target_id]
        if users:
            raise ConfigError(
                "--drop-retired",
                f"{target_id!r} is selected by {users[0].stack_file} targets[{users[0].index}]",
                "drop it after no committed stack selects it",
            )


def _report(
    revision: UpstreamRevision,
    previous: Catalog,
    provenance: Upstream,
    facts: Facts,
    changes: TargetChanges,
    stacks: StackSelections,
) -> tuple[list[str], bool]:
    """The report's lines up to its file list, sections in the order a reviewer acts on them, and whether every
    target and the model cache conform."""
    catalog, before, c = facts.catalog, previous.data.upstream, changes
    conformance, cache_problems = planned_conformance(facts)
    criteria = [
        f"{key}: {value} -> {getattr(catalog.criteria, key)}"
        for key, value in previous.criteria.model_dump().items()
        if getattr(catalog.criteria, key) != value
    ]
    notes = [f"not vendored (not a regular {', '.join(('.yaml', '.md', '.sh'))} file): {f}" for f in revision.skipped]
    notes += [
        f"performance table row {row.source} names {target_id}, which has no manifest"
        for target_id, row in revision.figures.items()
        if target_id not in revision.targets
    ]
    for recipe in catalog.recipes.values():
        figures = recipe.entry.performance.model_dump().items()
        speculative = recipe.draft_tokens is not None
        unknown = [k for k, v in figures if v is None and (k != "syntheticAcceptanceLength" or speculative)]
        if recipe.entry.performance.published and unknown:
            notes.append(f"{recipe.id}: some figures unknown ({', '.join(unknown)})")
    notes += stacks.unlisted
    unpublished = [r.id for r in catalog.recipes.values() if not r.entry.performance.published]
    unknown_gpus: dict[str, list[str]] = {}
    for recipe in catalog.recipes.values():
        for label in (g for g in recipe.gpu_products if facts.aws.gpu_of_product(g) is None):
            unknown_gpus.setdefault(label, []).append(recipe.id)
    cache = model_cache_changes(previous.model_cache, catalog.model_cache)
    manifests = (previous_manifests(previous), next_manifests(revision))
    broken = broken_selections(stacks.selections, changes, *manifests, set(catalog.retired))
    retired = retired_selections(stacks.selections, catalog)
    changed = len([t for t in c.changed if t not in {new for _, new, _ in c.renamed}])
    counts = f"{len(c.added)} added, {len(c.removed)} removed, {len(c.renamed)} renamed, {changed} changed"
    lines = [
        f"Absorbing {provenance.repository} {provenance.path} at {provenance.commit} ({provenance.date})",
        f"  catalog was at {before.commit} ({before.date})",
        "",
        f"Targets: {len(catalog.recipes)} (was {len(previous.recipes)}): {counts}, {len(c.unchanged)} unchanged",
        *(f"  added    {t}" + ("  [no published figures]" if t in unpublished else "") for t in c.added),
        *(f"  removed  {t}" for t in c.removed),
        *(f"  renamed  {old} -> {new}  (similarity {score:.3f})" for old, new, score in c.renamed),
    ]
    for target_id, fields in c.changed.items():
        lines += [f"  changed  {target_id}: {fields[0]}", *(f"           {target_id}: {f}" for f in fields[1:])]
    published = (
        f"unknown for {', '.join(unpublished)}" if unpublished else "every target has its row in the performance table"
    )
    lines += ["", f"Published figures: {published}"]
    gaps = data_gaps(unknown_gpus, {r.id: r.checkpoints for r in catalog.recipes.values()}, facts.checkpoints)
    lines += ["", "Data gaps (steps before a stack places these targets):" + ("" if gaps else " none")]
    lines += [f"  {number}. {gap}" for number, gap in enumerate(gaps, 1)]
    lines += ["", "Model cache:" + (" no change" if not cache else ""), *(f"  {line}" for line in cache)]
    lines += ["Criteria: " + ("; ".join(criteria) or "no change"), ""]
    lines += [
        "Stacks selecting a removed or renamed target:" + ("" if broken else " none"),
        *(f"  {b}" for b in broken),
    ]
    lines += ["Stacks selecting a retired target:" + ("" if retired else " none"), *(f"  {r}" for r in retired)]
    lines += [
        "",
        "Conformance (each target planned with every documented setting; differences not explained by one of them):",
    ]
    for target_id, problems in [*conformance.items(), ("model cache (claim, download Jobs)", cache_problems)]:
        lines += [
            f"  {target_id:<40} {'DOES NOT CONFORM' if problems else 'conforms'}",
            *(f"      {p}" for p in problems),
        ]
    lines += ["", "Notes:", *(f"  {n}" for n in notes)] if notes else []
    return lines, not cache_problems and not any(conformance.values())


def data_gaps(
    unknown_gpus: Mapping[str, list[str]], loads: Mapping[str, Sequence[str]], sizes: CheckpointSizes
) -> list[str]:
    """What the absorbed targets need from other data files: every tool lists them meanwhile (a target on an
    unknown GPU is not placeable, a checkpoint without a size counts at the unlisted estimate). `loads`: the
    checkpoints of each target."""
    gaps = [
        f"GPU {label} is not in catalog/gpus.yaml (targets {', '.join(targets)}): add productLabel, memoryGB, arch "
        "(and an instance type that has it) before a stack places these targets on a node pool"
        for label, targets in unknown_gpus.items()
    ]
    unsized: dict[str, list[str]] = {}
    for target_id, checkpoints in loads.items():
        for repository in (r for r in checkpoints if r not in sizes.repositories):
            unsized.setdefault(repository, []).append(target_id)
    gaps += [
        f"checkpoint {repository} has no size in catalog/checkpoints.yaml (targets {', '.join(targets)}): add the "
        f"Hub's figure; until then the model cache counts it at the unlisted estimate ({sizes.unlisted.sizeGB} GB)"
        for repository, targets in unsized.items()
    ]
    return gaps


def absorb(
    upstream: Path,
    commit: str,
    date: Optional[str],
    root: Path,
    dry_run: bool,
    dropped: frozenset[str] = frozenset(),
    project_dir: Path = PROJECT_DIR,
    step: Callable[[str], None] = lambda _: None,
) -> tuple[str, bool, bool]:
    """The report, whether the catalog was written, and whether every target and the model cache conform."""
    step("reading the committed stacks and the current catalog")
    stacks = read_stacks(project_dir)
    previous = load_catalog(root)
    _check_drops(dropped, previous, stacks)
    step(f"reading upstream {upstream}")
    revision = read_upstream(upstream)
    provenance = resolve(
        upstream,
        commit,
        date,
        previous.data.upstream,
        plain_copy=upstream.is_relative_to(root.resolve()),
    )
    data, changes = next_catalog(revision, previous, provenance, dropped)
    step(f"staging {len(revision.files)} upstream files and the next targets.yaml in a copy of the catalog")
    with tempfile.TemporaryDirectory(prefix="absorb-") as tmp:
        staging = Path(tmp) / "catalog"
        replaced = {RECIPES_DIR, RETIRED_DIR, TARGETS_FILE}
        shutil.copytree(root, staging, ignore=lambda d, _: replaced if Path(d) == root else set())
        for relative in revision.files:
            (staging / RECIPES_DIR / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(upstream / relative, staging / RECIPES_DIR / relative)
        _stage_retired(data, previous, root, staging)
        (staging / TARGETS_FILE).write_text(targets_yaml(data))
        step("loading the staged catalog and checking every target's conformance with its recipe")
        lines, conforms = _report(revision, previous, provenance, load_facts(staging), changes, stacks)
        files = _file_changes(staging / RECIPES_DIR, root / RECIPES_DIR)
        files += [f"{f[:2]}../{RETIRED_DIR}/{f[2:]}" for f in _file_changes(staging / RETIRED_DIR, root / RETIRED_DIR)]
        files += (
            [] if filecmp.cmp(staging / TARGETS_FILE, root / TARGETS_FILE, shallow=False) else [f"~ ../{TARGETS_FILE}"]
        )
        written = bool(files) and not dry_run
        if written:
            step(f"writing {len(files)} changed files into {root}")
            for directory in (RECIPES_DIR, RETIRED_DIR):  # the staged directories swapped in, then targets.yaml
                _swap_in(staging, root, directory)
            shutil.copyfile(staging / TARGETS_FILE, root / TARGETS_FILE)
    lines += [
        "",
        f"Files under catalog/recipes/: {f'{len(files)} changed' if files else 'no change'}",
        *(f"  {f}" for f in files),
    ]
    outcome = "Written: catalog/recipes/ and catalog/targets.yaml." if written else "Dry run: nothing written."
    lines += ["", outcome if files else "No change: the catalog already holds this revision."]
    return "\n".join(lines) + "\n", written, conforms


def _printer() -> Callable[[str], None]:
    """Each step on stderr with the seconds since the absorb started (the report goes to stdout)."""
    start = time.monotonic()
    return lambda text: print(f"absorb [{time.monotonic() - start:5.1f} s] {text}", file=sys.stderr, flush=True)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="make absorb", description=__doc__.splitlines()[0] if __doc__ else None)
    add = parser.add_argument
    add("--upstream", type=Path, required=True, help="the upstream recipes/nemotron-3.5-lightning directory")
    add("--commit", required=True, help="the upstream commit those files are")
    add("--date", help="the commit date (YYYY-MM-DD); read from git when UPSTREAM is a checkout")
    add("--dry-run", action="store_true", help="report only; write nothing")
    drop = "leave this retired target out of the catalog (refused while a committed stack selects it)"
    add("--drop-retired", action="append", default=[], metavar="ID", help=drop)
    add("--progress", action="store_true", help="print each step on stderr as it starts (`make absorb` does)")
    add("--project-dir", type=Path, default=PROJECT_DIR, help="the project whose Pulumi.*.yaml stacks are checked")
    args = parser.parse_args(argv)
    step = _printer() if args.progress else lambda _: None
    try:
        upstream, dropped = args.upstream.resolve(), frozenset(args.drop_retired)
        report, _, conforms = absorb(
            upstream, args.commit, args.date, DATA_DIR, args.dry_run, dropped, args.project_dir, step
        )
    except (ConfigError, UpstreamError, TableError, ProvenanceError) as error:
        print(f"error: not absorbed: {error}", file=sys.stderr)
        return 2
    print(report, end="")
    return 0 if conforms else 1


if __name__ == "__main__":
    sys.exit(main())
