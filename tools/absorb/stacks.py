"""The stacks of this repository (`Pulumi.<stack>.yaml`), the catalog targets each selects, and which of
those selections an absorbed revision breaks (with the replacement to select instead)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from tools.absorb.changes import Manifests, TargetChanges, closest


@dataclass(frozen=True)
class Selection:
    stack_file: str
    index: int
    target_id: str


def selections(project_dir: Path) -> list[Selection]:
    """Every `targets[i].id` of every stack file, in file order."""
    project = yaml.safe_load((project_dir / "Pulumi.yaml").read_text())["name"]
    found: list[Selection] = []
    for path in sorted(project_dir.glob("Pulumi.*.yaml")):
        config = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
        for index, target in enumerate(config.get(f"{project}:targets") or []):
            found.append(Selection(path.name, index, str(target.get("id"))))
    return found


def broken_selections(
    stack_selections: list[Selection],
    changes: TargetChanges,
    previous: Mapping[str, Manifests],
    current: Mapping[str, Manifests],
) -> list[str]:
    """One line per selection of a renamed, removed or unknown target; a removed one gets its closest match."""
    renamed, lines = changes.new_id_of, []
    for selection in stack_selections:
        where = f"{selection.stack_file} targets[{selection.index}]: {selection.target_id}"
        if selection.target_id in renamed:
            lines.append(f"{where} was renamed: select {renamed[selection.target_id]}")
        elif selection.target_id in changes.removed:
            replacement, score = closest(previous[selection.target_id], current)
            lines.append(f"{where} was removed; closest replacement: {replacement} (similarity {score:.3f})")
        elif selection.target_id not in current:
            lines.append(f"{where} is in neither revision")
    return lines
