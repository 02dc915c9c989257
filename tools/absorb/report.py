"""The absorb report: plain text, one finding per line, sections in the order a reviewer acts on them."""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.absorb.changes import TargetChanges


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
