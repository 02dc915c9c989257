"""The stacks of this repository (`Pulumi.<stack>.yaml`), the catalog targets each selects, and which of
those selections an absorbed revision breaks (with the replacement to select instead).

Stack files are read with the project's one strict reader (`tools.stack_files`), so a file the program
could not read stops the absorb with one line naming it (exit 2) instead of a traceback. A stack whose
`targets` is not a list (a value the config check will refuse, such as the retired `auto`) selects
no catalog id this report can check; it is named in a note, not treated as an error of the absorb.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.catalog import Catalog
from tools.absorb.changes import Manifests, TargetChanges, closest
from tools.stack_files import read_yaml, stack_config

TARGETS_KEY = "targets"


@dataclass(frozen=True)
class Selection:
    stack_file: str
    index: int
    target_id: str


@dataclass(frozen=True)
class StackSelections:
    selections: list[Selection]
    unlisted: list[str] = field(default_factory=list)  # stacks whose `targets` is not a list of targets


def _targets_of(stack_file: str, raw: str) -> list[Selection] | str:
    """The selections of one stack's `targets` value as `stack_config` hands it over (a list as JSON, a string
    as is), or why there are none to check."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    if not isinstance(value, list):
        return (
            f"{stack_file}: {TARGETS_KEY} is {bounded(value)}, not a list of targets: not checked against this revision"
        )
    found = []
    for index, target in enumerate(value):
        target_id = target.get("id") if isinstance(target, dict) else None
        if not isinstance(target_id, str):
            raise ConfigError(f"{stack_file}: {TARGETS_KEY}[{index}].id", "is not a target id (a string)")
        found.append(Selection(stack_file, index, target_id))
    return found


def read_stacks(project_dir: Path) -> StackSelections:
    """Every `targets[i].id` of every stack file, in file order; a stack file that cannot be read raises a
    `ConfigError` naming it."""
    project_file = read_yaml(project_dir / "Pulumi.yaml")
    if not isinstance(project_file, dict) or not isinstance(project_file.get("name"), str):
        raise ConfigError("Pulumi.yaml", "is not a Pulumi project file (a mapping with a name)")
    key = f"{project_file['name']}:{TARGETS_KEY}"
    found: list[Selection] = []
    unlisted: list[str] = []
    for path in sorted(project_dir.glob("Pulumi.*.yaml")):
        stack = path.name[len("Pulumi.") : -len(".yaml")]
        config, _ = stack_config(stack, project_dir)
        if key not in config:
            continue
        targets = _targets_of(path.name, config[key])
        if isinstance(targets, str):
            unlisted.append(targets)
        else:
            found += targets
    return StackSelections(found, unlisted)


def selections(project_dir: Path) -> list[Selection]:
    return read_stacks(project_dir).selections


def broken_selections(
    stack_selections: list[Selection],
    changes: TargetChanges,
    previous: Mapping[str, Manifests],
    current: Mapping[str, Manifests],
    retired: Collection[str] = (),
) -> list[str]:
    """One line per selection of a target this revision renames or removes (it stays selectable, retired),
    or of an id in neither revision nor retired; a removed one gets its closest match."""
    renamed, lines = changes.new_id_of, []
    kept = "it stays selectable, retired"
    for selection in stack_selections:
        where = f"{selection.stack_file} targets[{selection.index}]: {selection.target_id}"
        if selection.target_id in renamed:
            lines.append(f"{where} was renamed: select {renamed[selection.target_id]}; {kept}")
        elif selection.target_id in changes.removed:
            replacement, score = closest(previous[selection.target_id], current)
            lines.append(f"{where} was removed; closest replacement: {replacement} (similarity {score:.3f}); {kept}")
        elif selection.target_id not in current and selection.target_id not in retired:
            lines.append(f"{where} is in neither revision")
    return lines


def retired_selections(stack_selections: list[Selection], catalog: Catalog) -> list[str]:
    """One line per selection of a retired target of `catalog`: what the stack's render warns about."""
    return [
        catalog.retired[s.target_id].warning(f"{s.stack_file} targets[{s.index}].id")
        for s in stack_selections
        if s.target_id in catalog.retired
    ]
