"""What changed between two catalog revisions (targets added, removed, renamed by content, changed), and which
selections of the committed stacks (`Pulumi.<stack>.yaml`) that breaks, with the replacement to select instead.

A rename is a removed and an added target of the same kind (backend, components, GPU products,
speculative-decoding method) whose manifests, with their own names blanked out, are at least
`RENAME_SIMILARITY` alike (difflib ratio over the lines of the canonical YAML). Sibling recipes for another GPU
are ~0.99 alike, so the kind, not the ratio, keeps a new GPU's target from passing for a rename of a removed
one. Pairs are taken best first, each target at most once.

Stack files are read with the program's strict reader (`tools.stack_files`): one that cannot be read stops the
absorb with one line naming it. A stack whose `targets` is not a list selects no catalog id to check; it is
named in a note.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.catalog import Catalog, ModelCacheFacts, Recipe
from tools.conformance import Difference, differences
from tools.stack_files import project_name, stack_config, stack_names

RENAME_SIMILARITY = 0.9
MAX_PATHS = 6
NAME_PLACEHOLDER = "<name>"


@dataclass(frozen=True)
class Manifests:
    """A target as the comparison sees it: its recipe (two upstream objects) and its catalog entry."""

    recipe: Recipe
    entry: dict[str, Any]  # targets.yaml fields besides `id`

    @property
    def kind(self) -> tuple[Any, ...]:
        recipe = self.recipe
        return (
            recipe.backend,
            tuple((c["name"], c["type"]) for c in recipe.components),
            tuple(recipe.gpu_products),
            recipe.speculative_decoding,
        )


@dataclass
class TargetChanges:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str, float]] = field(default_factory=list)  # old, new, similarity
    changed: dict[str, list[str]] = field(default_factory=dict)  # id (new id for a rename) -> fields, never empty
    unchanged: list[str] = field(default_factory=list)

    @property
    def new_id_of(self) -> dict[str, str]:
        return {old: new for old, new, _ in self.renamed}


def _blank_names(value: Any, names: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _blank_names(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank_names(v, names) for v in value]
    if isinstance(value, str):
        for name in names:
            value = value.replace(name, NAME_PLACEHOLDER)
        return value
    return value


def normalized(target: Manifests) -> list[Any]:
    """Both objects with the target's own names (DGD, ConfigMap) blanked, so a rename alone changes nothing."""
    config_map, dgd = target.recipe.config_map, target.recipe.dgd
    own = {dgd["metadata"]["name"], config_map["metadata"]["name"]}
    names = tuple(sorted(own, key=len, reverse=True))  # the longer first: one name may contain the other
    return [_blank_names(config_map, names), _blank_names(dgd, names)]


def similarity(a: Manifests, b: Manifests) -> float:
    lines_a = yaml.safe_dump(normalized(a), sort_keys=True).splitlines()
    lines_b = yaml.safe_dump(normalized(b), sort_keys=True).splitlines()
    return difflib.SequenceMatcher(None, lines_a, lines_b, autojunk=False).ratio()


def _readable(path: str, components: list[str]) -> str:
    """`root[1]['spec']['components'][2]['replicas']` -> `DynamoGraphDeployment spec.components[decode].replicas`."""
    kind = "ConfigMap" if path.startswith("root[0]") else "DynamoGraphDeployment"
    rest = path[len("root[0]") :]

    def component(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return f".components[{components[index] if index < len(components) else index}]"

    rest = _dotted(re.sub(r"\['components'\]\[(\d+)\]", component, rest))
    return f"{kind} {rest.lstrip('.')}"


def _dotted(path: str) -> str:
    """`root['spec']['args'][3]` -> `root.spec.args`: keys dotted, one entry per changed list (not per item)."""
    return re.sub(r"(\[\d+\])+$", "", re.sub(r"\['([^']*)'\]", r".\1", path))


def _described(difference: Difference, components: list[str]) -> str:
    """The readable path, with both values when they are short scalars (`...args: '32' -> '48'`)."""
    path = _readable(difference.path, components)
    values = (difference.old, difference.new)
    short = all(isinstance(v, (str, int, float)) and len(repr(v)) <= 40 for v in values)
    if difference.change == "values_changed" and short:
        return f"{path}: {difference.old!r} -> {difference.new!r}"
    return path


def field_changes(old: Manifests, new: Manifests) -> list[str]:
    """Catalog fields (`performance.ttftP50Ms: 241.21 -> 250.0`) and manifest paths that differ."""
    found = [
        f"{key}: {old.entry.get(key)!r} -> {new.entry.get(key)!r}"
        for key in sorted(old.entry.keys() | new.entry.keys())
        if key != "performance" and old.entry.get(key) != new.entry.get(key)
    ]
    old_figures, new_figures = old.entry.get("performance", {}), new.entry.get("performance", {})
    found += [
        f"performance.{key}: {old_figures.get(key)} -> {new_figures.get(key)}"
        for key in sorted(old_figures.keys() | new_figures.keys())
        if old_figures.get(key) != new_figures.get(key)
    ]
    components = [c["name"] for c in new.recipe.dgd["spec"]["components"]]
    paths = list(dict.fromkeys(_described(d, components) for d in differences(normalized(old), normalized(new))))
    more = [f"(+{len(paths) - MAX_PATHS} more manifest paths)"] if len(paths) > MAX_PATHS else []
    found += paths[:MAX_PATHS] + more
    return found


def compare_targets(old: Mapping[str, Manifests], new: Mapping[str, Manifests]) -> TargetChanges:
    changes = TargetChanges()
    removed = [t for t in old if t not in new]
    added = [t for t in new if t not in old]
    pairs = sorted(
        ((similarity(old[r], new[a]), r, a) for r in removed for a in added if old[r].kind == new[a].kind), reverse=True
    )
    for score, old_id, new_id in pairs:
        if score >= RENAME_SIMILARITY and old_id in removed and new_id in added:
            removed.remove(old_id)
            added.remove(new_id)
            changes.renamed.append((old_id, new_id, score))
            fields = [f for f in field_changes(old[old_id], new[new_id]) if not f.startswith("manifest:")]
            if fields:  # beyond the new name (the rename line says that)
                changes.changed[new_id] = fields
    changes.added, changes.removed = sorted(added), sorted(removed)
    for target_id in (t for t in new if t in old):
        fields = field_changes(old[target_id], new[target_id])
        if fields:
            changes.changed[target_id] = fields
        else:
            changes.unchanged.append(target_id)
    return changes


def closest(target: Manifests, candidates: Mapping[str, Manifests]) -> tuple[str, float]:
    """The candidate most like `target` (any shape): a replacement to suggest for a removed target."""
    return max(((candidate_id, similarity(target, m)) for candidate_id, m in candidates.items()), key=lambda c: c[1])


def model_cache_changes(old: ModelCacheFacts, new: ModelCacheFacts) -> list[str]:
    """Claim size, download Jobs added or removed, and per Job its checkpoints and other manifest paths."""
    found = [f"claim size: {old.size} -> {new.size}"] if old.size != new.size else []
    found += [f"claim: {path}" for path in _paths(old.claim, new.claim) if not path.endswith("storage")]
    old_jobs, new_jobs = {j.name: j for j in old.jobs}, {j.name: j for j in new.jobs}
    for name in sorted(new_jobs.keys() - old_jobs.keys()):
        found.append(
            f"download Job added: {name} ({new_jobs[name].path}): "
            + ", ".join(f"{env}={repo}" for env, repo in new_jobs[name].checkpoints)
        )
    found += [f"download Job removed: {name}" for name in sorted(old_jobs.keys() - new_jobs.keys())]
    for name in sorted(old_jobs.keys() & new_jobs.keys()):
        before, after = old_jobs[name], new_jobs[name]
        if before.checkpoints != after.checkpoints:
            found.append(
                f"download Job {name} checkpoints: "
                + ", ".join(f"{env}={repo}" for env, repo in before.checkpoints)
                + " -> "
                + ", ".join(f"{env}={repo}" for env, repo in after.checkpoints)
            )
        found += [
            f"download Job {name}: {path}"
            for path in _paths(before.manifest, after.manifest)
            if not path.endswith(".args")
        ]
        if before.script != after.script:
            found.append(f"download Job {name}: script changed")
    return found


def _paths(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(_dotted(d.path).removeprefix("root.") for d in differences(old, new)))


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
    key, found = f"{project_name(project_dir)}:{TARGETS_KEY}", StackSelections([])
    for stack in stack_names(project_dir):
        config, _ = stack_config(stack, project_dir)
        targets = _targets_of(f"Pulumi.{stack}.yaml", config[key]) if key in config else []
        if isinstance(targets, str):
            found.unlisted.append(targets)
        else:
            found.selections.extend(targets)
    return found


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
