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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from serving_stack.errors import ConfigError
from serving_stack.facts import Facts, load_facts
from serving_stack.facts.aws import gpu_of_product
from serving_stack.facts.catalog import TARGETS_FILE, Catalog, load_catalog
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
    Provenance,
    ProvenanceError,
    TableError,
    UpstreamError,
    UpstreamRevision,
    read_upstream,
    resolve,
)
from tools.conformance import planned_conformance

PROJECT_DIR = Path(__file__).resolve().parents[2]


@dataclass
class Report:
    source: str  # `ai-dynamo/dynamo recipes/nemotron-3.5-lightning at 1a2b3c4 (2026-09-02)`
    previous: str
    targets_before: int
    targets_after: int
    changes: TargetChanges
    unpublished: list[str]  # targets (new catalog) without any published figure
    unknown_gpus: dict[str, list[str]]  # product label -> targets
    model_cache: list[str]
    criteria: list[str]
    stacks: list[str]
    retired: list[str]  # selections of retired targets (after this revision)
    conformance: dict[str, list[str]]
    model_cache_conformance: list[str]
    notes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # catalog/recipes/ files (+ added, - removed, ~ changed)

    @property
    def nonconforming(self) -> list[str]:
        return [t for t, problems in self.conformance.items() if problems]

    def text(self, written: bool) -> str:
        c = self.changes
        renamed_to = {new for _, new, _ in c.renamed}
        counts = (
            f"{len(c.added)} added, {len(c.removed)} removed, {len(c.renamed)} renamed, "
            f"{len([t for t in c.changed if t not in renamed_to])} changed, {len(c.unchanged)} unchanged"
        )
        lines = [
            f"Absorbing {self.source}",
            f"  catalog was at {self.previous}",
            "",
            f"Targets: {self.targets_after} (was {self.targets_before}): {counts}",
        ]
        lines += [f"  added    {t}" + ("  [no published figures]" if t in self.unpublished else "") for t in c.added]
        lines += [f"  removed  {t}" for t in c.removed]
        lines += [f"  renamed  {old} -> {new}  (similarity {score:.3f})" for old, new, score in c.renamed]
        for target_id, fields in c.changed.items():
            lines += [f"  changed  {target_id}: {fields[0]}", *(f"           {target_id}: {f}" for f in fields[1:])]
        lines += [
            "",
            "Published figures: "
            + (
                f"unknown for {', '.join(self.unpublished)}"
                if self.unpublished
                else "every target has its row in the performance table"
            ),
        ]
        lines += [
            f"GPU {label} is not in catalog/gpus.yaml (targets {', '.join(targets)}): add productLabel, "
            "memoryGB, arch before a stack places these targets on a node pool"
            for label, targets in self.unknown_gpus.items()
        ]
        lines += ["", "Model cache:" + (" no change" if not self.model_cache else "")]
        lines += [f"  {line}" for line in self.model_cache]
        lines += ["Criteria: " + ("no change" if not self.criteria else "; ".join(self.criteria))]
        lines += ["", "Stacks selecting a removed or renamed target:" + (" none" if not self.stacks else "")]
        lines += [f"  {line}" for line in self.stacks]
        lines += ["Stacks selecting a retired target:" + (" none" if not self.retired else "")]
        lines += [f"  {line}" for line in self.retired]
        lines += [
            "",
            "Conformance (each target planned with every documented setting; differences not explained by "
            "one of them):",
        ]
        for target_id, problems in self.conformance.items():
            lines += [f"  {target_id:<40} {'conforms' if not problems else 'DOES NOT CONFORM'}"]
            lines += [f"      {p}" for p in problems]
        lines += [
            f"  {'model cache (claim, download Jobs)':<40} "
            + ("conforms" if not self.model_cache_conformance else "DOES NOT CONFORM")
        ]
        lines += [f"      {p}" for p in self.model_cache_conformance]
        if self.notes:
            lines += ["", "Notes:", *(f"  {n}" for n in self.notes)]
        lines += [
            "",
            f"Files under catalog/recipes/: {len(self.files)} changed"
            if self.files
            else "Files under catalog/recipes/: no change",
        ]
        lines += [f"  {f}" for f in self.files]
        outcome = (
            "No change: the catalog already holds this revision."
            if not self.files
            else "Written: catalog/recipes/ and catalog/targets.yaml."
            if written
            else "Dry run: nothing written."
        )
        return "\n".join([*lines, "", outcome]) + "\n"


def _unknown_gpus(facts: Facts) -> dict[str, list[str]]:
    unknown: dict[str, list[str]] = {}
    for recipe in facts.catalog.recipes.values():
        for label in recipe.gpu_products:
            if gpu_of_product(facts.aws.gpus, label) is None:
                unknown.setdefault(label, []).append(recipe.id)
    return unknown


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


def _install(staging: Path, root: Path) -> None:
    """Swap the staged `recipes/` and `retired/` in, then write `targets.yaml`."""
    _swap_in(staging, root, RECIPES_DIR)
    _swap_in(staging, root, RETIRED_DIR)
    shutil.copyfile(staging / TARGETS_FILE, root / TARGETS_FILE)


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
    provenance: Provenance,
    facts: Facts,
    changes: TargetChanges,
    stacks: StackSelections,
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
        unknown = [
            key
            for key, value in recipe.entry.performance.model_dump().items()
            if value is None and (key != "syntheticAcceptanceLength" or recipe.draft_tokens is not None)
        ]
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
            stacks.selections, changes, previous_manifests(previous), next_manifests(revision), set(catalog.retired)
        ),
        retired=retired_selections(stacks.selections, catalog),
        model_cache_conformance=cache_problems,
        notes=notes + stacks.unlisted,
    )


def absorb(
    upstream: Path,
    commit: str,
    date: Optional[str],
    root: Path,
    dry_run: bool,
    dropped: frozenset[str] = frozenset(),
    project_dir: Path = PROJECT_DIR,
    step: Callable[[str], None] = lambda _: None,
) -> tuple[Report, bool]:
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
        Provenance(**previous.data.upstream.model_dump()),
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
        report = _report(revision, previous, provenance, load_facts(staging), changes, stacks)
        report.files = _file_changes(staging / RECIPES_DIR, root / RECIPES_DIR)
        report.files += [
            f"{line[:2]}../{RETIRED_DIR}/{line[2:]}"
            for line in _file_changes(staging / RETIRED_DIR, root / RETIRED_DIR)
        ]
        if not filecmp.cmp(staging / TARGETS_FILE, root / TARGETS_FILE, shallow=False):
            report.files.append(f"~ ../{TARGETS_FILE}")
        written = bool(report.files) and not dry_run
        if written:
            step(f"writing {len(report.files)} changed files into {root}")
            _install(staging, root)
    return report, written


def _printer() -> Callable[[str], None]:
    """Each step on stderr with the seconds since the absorb started (the report goes to stdout)."""
    start = time.monotonic()
    return lambda text: print(f"absorb [{time.monotonic() - start:5.1f} s] {text}", file=sys.stderr, flush=True)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="make absorb", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--upstream", type=Path, required=True, help="the upstream recipes/nemotron-3.5-lightning directory"
    )
    parser.add_argument("--commit", required=True, help="the upstream commit those files are")
    parser.add_argument("--date", help="the commit date (YYYY-MM-DD); read from git when UPSTREAM is a checkout")
    parser.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    parser.add_argument(
        "--drop-retired",
        action="append",
        default=[],
        metavar="ID",
        help="leave this retired target out of the catalog (refused while a committed stack selects it)",
    )
    parser.add_argument(
        "--progress", action="store_true", help="print each step on stderr as it starts (`make absorb` does)"
    )
    parser.add_argument(
        "--project-dir", type=Path, default=PROJECT_DIR, help="the project whose Pulumi.*.yaml stacks are checked"
    )
    args = parser.parse_args(argv)
    try:
        report, written = absorb(
            args.upstream.resolve(),
            args.commit,
            args.date,
            DATA_DIR,
            args.dry_run,
            frozenset(args.drop_retired),
            args.project_dir,
            _printer() if args.progress else lambda _: None,
        )
    except (ConfigError, UpstreamError, TableError, ProvenanceError) as error:
        print(f"error: not absorbed: {error}", file=sys.stderr)
        return 2
    print(report.text(written), end="")
    return 1 if report.nonconforming or report.model_cache_conformance else 0


if __name__ == "__main__":
    sys.exit(main())
