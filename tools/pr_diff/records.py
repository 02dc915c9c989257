"""One offline render (`build/<stack>/`) as plain data: resources by URN, outputs, policy violations."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.render import WARNINGS_FILE
from tools.rollout.graph import STACK_TYPE, Resource

_VIOLATION = re.compile(r"^    \[([a-z]+)\][ \t]+\S+ v\S+[ \t]+(\S+) \((.+)\)$", re.MULTILINE)


@dataclass(frozen=True)
class Violation:
    level: str
    policy: str
    resource: str
    message: str

    @property
    def mandatory(self) -> bool:
        return self.level == "mandatory"


@dataclass(frozen=True)
class Render:
    resources: dict[str, Resource]  # by URN tail (`parentType$type::name`), as the engine matches state
    outputs: dict[str, Any]
    violations: tuple[Violation, ...]
    warnings: tuple[str, ...] = ()  # the render's `warnings.txt` (a retired target selected)

    def by_key(self, key: str) -> Resource | None:
        return next((r for r in self.resources.values() if r.key == key), None)

    @classmethod
    def from_records(
        cls,
        records: list[dict[str, Any]],
        outputs: dict[str, Any],
        violations: tuple[Violation, ...] = (),
        warnings: tuple[str, ...] = (),
    ) -> Render:
        chains = qualified_types(records)
        resources = {f"{chains[r['type'] + '::' + r['name']]}::{r['name']}": Resource.from_record(r) for r in records}
        return cls(resources, outputs, violations, warnings)


def qualified_types(records: list[dict[str, Any]]) -> dict[str, str]:
    """`type::name` -> the `parentType$...$type` chain the URN carries (the stack itself is left out)."""
    parents = {f"{r['type']}::{r['name']}": (r["type"], r.get("parent", "")) for r in records}

    def chain(ref: str, seen: frozenset[str]) -> list[str]:
        type_token, parent = parents[ref]
        above = chain(parent, seen | {ref}) if parent in parents and parent not in seen else []
        return [*above, type_token]

    return {ref: "$".join(t for t in chain(ref, frozenset()) if t != STACK_TYPE) for ref in parents}


def parse_policy_report(text: str) -> tuple[Violation, ...]:
    """The violations of `policy-report.txt` (the CLI's "Policy Violations:" layout): each header line, then
    its indented lines (the policy's description, then its message about this resource; URNs left out)."""
    parts = _VIOLATION.split(text)[1:]
    violations = set()
    for level, policy, resource, body in zip(*[iter(parts)] * 4, strict=True):
        lines = [line.strip() for line in body.splitlines() if line.startswith("    ")]
        lines = [line for line in lines if not line.startswith("urn:pulumi:")]
        violations.add(Violation(level, policy, resource, " ".join(lines[1:]) or " ".join(lines)))
    return tuple(sorted(violations, key=lambda v: (v.level, v.policy, v.resource, v.message)))


def load_render(directory: Path) -> Render:
    outputs_file, report_file = directory / "outputs.json", directory / "policy-report.txt"
    warnings_file = directory / WARNINGS_FILE
    outputs = json.loads(outputs_file.read_text()) if outputs_file.is_file() else {}
    violations = parse_policy_report(report_file.read_text()) if report_file.is_file() else ()
    warnings = tuple(warnings_file.read_text().splitlines()) if warnings_file.is_file() else ()
    return Render.from_records(json.loads((directory / "resources.json").read_text()), outputs, violations, warnings)
