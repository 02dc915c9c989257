"""Read a rendered `resources.json` (the offline render's record of every resource) back into the shape
`offline.evaluate` takes, so the pack can judge any render or a hand-edited record file without the stack.

A record holds `type`, `name`, `parent` and `provider` (as `type::name`), `dependsOn`, `protect`,
`retainOnDelete` and `inputs` (secrets as `"[secret]"`). URNs are rebuilt the way the render's monitor builds
them (`<parent type>$<type>`), so reports name the same resources as the render's `policy-report.txt`; the
project is the root stack's name minus `-<stack>`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT_STACK = "pulumi:pulumi:Stack"
MAX_QUOTED = 120  # characters of input an error message may quote


class RecordsError(Exception):
    """A record file that cannot be judged: missing, unreadable, not JSON, or not a list of records."""


@dataclass(frozen=True)
class Record:
    type: str
    name: str
    urn: str
    parent: str
    inputs: Any
    provider: str = ""
    depends_on: list[str] = field(default_factory=list)
    protect: bool = False
    retain_on_delete: bool = False


def _quoted(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_QUOTED else text[:MAX_QUOTED] + "..."


def _checked(entries: Any, path: Path) -> list[dict[str, Any]]:
    if not isinstance(entries, list):
        raise RecordsError(f"{path}: expected a JSON list of resource records, got {type(entries).__name__}")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise RecordsError(f"{path}: record [{index}] is not an object: {_quoted(entry)}")
        for key in ("type", "name"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise RecordsError(
                    f"{path}: record [{index}].{key} must be a non-empty string, got {_quoted(entry.get(key))}"
                )
        for key in ("parent", "provider"):
            if not isinstance(entry.get(key, ""), str):
                raise RecordsError(
                    f"{path}: record [{index}].{key} must be a string (type::name), got {_quoted(entry.get(key))}"
                )
        if not isinstance(entry.get("dependsOn", []), list):
            raise RecordsError(f"{path}: record [{index}].dependsOn must be a list, got {_quoted(entry['dependsOn'])}")
    return entries


def _project(entries: list[dict[str, Any]], stack: str) -> Optional[str]:
    suffix = f"-{stack}"
    for entry in entries:
        root_type, _, root_name = str(entry.get("parent", "")).partition("::")
        if root_type == ROOT_STACK and root_name.endswith(suffix):
            return root_name[: -len(suffix)]
    return None


def load_records(path: Path, stack: str, project: Optional[str] = None) -> list[Record]:
    """The records of `path`, with URNs for `stack` (and `project`, default: read from the root stack)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordsError(f"{path}: no such file (render it first: make render STACK={stack})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise RecordsError(f"{path}: cannot read it: {error}") from None
    try:
        entries = _checked(json.loads(text), path)
    except json.JSONDecodeError as error:
        raise RecordsError(f"{path}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    project = project or _project(entries, stack) or "project"
    records = []
    for entry in entries:
        parent = entry.get("parent", "")
        qualified = f"{parent.split('::')[0]}${entry['type']}" if parent else entry["type"]
        records.append(
            Record(
                type=entry["type"],
                name=entry["name"],
                urn=f"urn:pulumi:{stack}::{project}::{qualified}::{entry['name']}",
                parent=parent,
                inputs=entry.get("inputs") or {},
                provider=entry.get("provider", ""),
                depends_on=[str(d) for d in entry.get("dependsOn", [])],
                protect=entry.get("protect") is True,
                retain_on_delete=entry.get("retainOnDelete") is True,
            )
        )
    return records
