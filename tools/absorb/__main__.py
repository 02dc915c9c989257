"""`make absorb UPSTREAM=<recipes/nemotron-3.5-lightning dir> COMMIT=<sha> [DATE=YYYY-MM-DD]`.

Vendors the upstream directory verbatim into `catalog/recipes/`, writes `catalog/targets.yaml` from it
and prints what changed. Everything is staged in a temporary copy of the catalog first: a revision
that does not load (an unsupported manifest, a table cell that is not a figure) writes nothing.
Exit status: 0 absorbed (or no change), 1 absorbed but some target does not conform, 2 not absorbed.
The catalog directory is the one the stack reads (`NEMOTRON_CATALOG_DIR` if set, else `catalog/`).
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

from serving_stack.errors import ConfigError
from serving_stack.facts import Facts, load_facts
from serving_stack.facts.aws import gpu_of_product
from serving_stack.facts.catalog import TARGETS_FILE, Catalog, load_catalog
from serving_stack.facts.strict_files import DATA_DIR
from tools.absorb.catalog_data import RECIPES_DIR, next_catalog, next_manifests, previous_manifests
from tools.absorb.catalog_file import targets_yaml
from tools.absorb.changes import TargetChanges, model_cache_changes
from tools.absorb.perf_table import TableError
from tools.absorb.provenance import Provenance, ProvenanceError, resolve
from tools.absorb.report import Report
from tools.absorb.stacks import broken_selections, selections
from tools.absorb.upstream import UpstreamError, UpstreamRevision, read_upstream
from tools.conformance import planned_conformance

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _unknown_gpus(facts: Facts) -> dict[str, list[str]]:
    unknown: dict[str, list[str]] = {}
    for recipe in facts.catalog.recipes.values():
        for label in recipe.gpu_products:
            if gpu_of_product(facts.aws.gpus, label) is None:
                unknown.setdefault(label, []).append(recipe.id)
    return unknown


def _file_changes(staged: Path, current: Path) -> list[str]:
    """Vendored files added, removed or changed (`+ perf/README.md`, `- x.yaml`, `~ y.yaml`)."""
    new = {p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()}
    old = {p.relative_to(current).as_posix() for p in current.rglob("*") if p.is_file()} if current.is_dir() else set()
    return (
        [f"+ {f}" for f in sorted(new - old)]
        + [f"- {f}" for f in sorted(old - new)]
        + [f"~ {f}" for f in sorted(new & old) if not filecmp.cmp(staged / f, current / f, shallow=False)]
    )


def _install(staging: Path, root: Path) -> None:
    """Swap the staged `recipes/` in by rename (never a half-copied tree), then write `targets.yaml`."""
    incoming, outgoing = root / f".{RECIPES_DIR}.incoming", root / f".{RECIPES_DIR}.outgoing"
    for leftover in (incoming, outgoing):
        shutil.rmtree(leftover, ignore_errors=True)
    shutil.copytree(staging / RECIPES_DIR, incoming)
    if (root / RECIPES_DIR).exists():
        (root / RECIPES_DIR).rename(outgoing)
    incoming.rename(root / RECIPES_DIR)
    shutil.rmtree(outgoing, ignore_errors=True)
    shutil.copyfile(staging / TARGETS_FILE, root / TARGETS_FILE)


def _report(
    revision: UpstreamRevision, previous: Catalog, provenance: Provenance, facts: Facts, changes: TargetChanges
) -> Report:
    catalog, before = facts.catalog, previous.data.upstream
    per_target, cache_problems = planned_conformance(facts)
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
        unknown = [key for key, value in recipe.entry.performance.model_dump().items() if value is None]
        if recipe.entry.performance.published and unknown:
            notes.append(f"{recipe.id}: some figures unknown ({', '.join(unknown)})")
    return Report(
        source=f"{provenance.repository} {provenance.path} at {provenance.commit} ({provenance.date})",
        previous=f"{before.commit} ({before.date})",
        targets_before=len(previous.recipes),
        targets_after=len(catalog.recipes),
        changes=changes,
        unpublished=[r.id for r in catalog.recipes.values() if not r.entry.performance.published],
        unknown_gpus=_unknown_gpus(facts),
        model_cache=model_cache_changes(previous.model_cache, catalog.model_cache),
        criteria=criteria,
        conformance=per_target,
        stacks=broken_selections(
            selections(PROJECT_DIR), changes, previous_manifests(previous), next_manifests(revision)
        ),
        model_cache_conformance=cache_problems,
        notes=notes,
    )


def absorb(upstream: Path, commit: str, date: Optional[str], root: Path, dry_run: bool) -> tuple[Report, bool]:
    previous = load_catalog(root)
    revision = read_upstream(upstream)
    provenance = resolve(
        upstream,
        commit,
        date,
        Provenance(**previous.data.upstream.model_dump()),
        plain_copy=upstream.is_relative_to(root.resolve()),
    )
    data, changes = next_catalog(revision, previous, provenance)
    with tempfile.TemporaryDirectory(prefix="absorb-") as tmp:
        staging = Path(tmp) / "catalog"
        shutil.copytree(root, staging, ignore=lambda d, _: {RECIPES_DIR, TARGETS_FILE} if Path(d) == root else set())
        for relative in revision.files:
            (staging / RECIPES_DIR / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(upstream / relative, staging / RECIPES_DIR / relative)
        (staging / TARGETS_FILE).write_text(targets_yaml(data))
        report = _report(revision, previous, provenance, load_facts(staging), changes)
        report.files = _file_changes(staging / RECIPES_DIR, root / RECIPES_DIR)
        if not filecmp.cmp(staging / TARGETS_FILE, root / TARGETS_FILE, shallow=False):
            report.files.append(f"~ ../{TARGETS_FILE}")
        written = bool(report.files) and not dry_run
        if written:
            _install(staging, root)
    return report, written


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="make absorb", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--upstream", type=Path, required=True, help="the upstream recipes/nemotron-3.5-lightning directory"
    )
    parser.add_argument("--commit", required=True, help="the upstream commit those files are")
    parser.add_argument("--date", help="the commit date (YYYY-MM-DD); read from git when UPSTREAM is a checkout")
    parser.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    args = parser.parse_args(argv)
    try:
        report, written = absorb(args.upstream.resolve(), args.commit, args.date, DATA_DIR, args.dry_run)
    except (ConfigError, UpstreamError, TableError, ProvenanceError) as error:
        print(f"error: not absorbed: {error}", file=sys.stderr)
        return 2
    print(report.text(written), end="")
    return 1 if report.nonconforming or report.model_cache_conformance else 0


if __name__ == "__main__":
    sys.exit(main())
