"""One field change of a `StackDiff` as Markdown: its topic, its value cells and the field table.

Shared by the resource blocks and the outputs table of `markdown.render_markdown`.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from tools.pr_diff.changes import MISSING, FieldChange

MAX_ROWS_PER_RESOURCE = 60
VALUE_CHARS = 120
# What a field is about, for the reviewer's eye: (label, path pattern).
TOPICS = (
    ("replicas", r"\.replicas$"),
    ("image", r"\.image$"),
    ("env", r"\.env\["),
    ("args", r"\.(args|command)$"),
    ("pool size", r"^scalingConfig\."),
    ("instance type", r"^instanceTypes$"),
    ("IAM", r": statement "),
)


def topic(change: FieldChange) -> str:
    for label, pattern in TOPICS:
        if re.search(pattern, change.path):
            return "IAM ⚠️ widens" if label == "IAM" and change.widens else label
    return ""


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def code(value: Any) -> str:
    if value is MISSING:
        return "*(absent)*"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"
    return cell(f"`` {text} ``" if "`" in text else f"`{text}`")


def _list_change(before: list[Any], after: list[Any]) -> str:
    """Scalar lists (container args) as the edits that turn one into the other."""
    if all(not isinstance(v, (dict, list)) for v in before + after):
        parts = []
        matcher = difflib.SequenceMatcher(
            a=[json.dumps(v) for v in before], b=[json.dumps(v) for v in after], autojunk=False
        )
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op in ("delete", "replace"):
                parts.append(f"− [{i1}] " + " ".join(code(v) for v in before[i1:i2]))
            if op in ("insert", "replace"):
                parts.append(f"+ [{j1}] " + " ".join(code(v) for v in after[j1:j2]))
        return "<br>".join(parts)
    return f"list of {len(before)} → {len(after)} items"


def describe(change: FieldChange) -> str:
    if change.hidden:
        return "changed (value not shown)"
    if change.note:
        return cell(change.note.replace("<", "&lt;"))
    if change.added:
        return f"+ {code(change.after)}"
    if change.removed:
        return f"− {code(change.before)}"
    if isinstance(change.before, list) and isinstance(change.after, list):
        return _list_change(change.before, change.after)
    return f"{code(change.before)} → {code(change.after)}"


def field_table(fields: tuple[FieldChange, ...]) -> list[str]:
    lines = ["| | field | change |", "|---|---|---|"]
    for change in fields[:MAX_ROWS_PER_RESOURCE]:
        lines.append(f"| {topic(change)} | `{cell(change.path)}` | {describe(change)} |")
    if len(fields) > MAX_ROWS_PER_RESOURCE:
        lines.append(f"| | … | {len(fields) - MAX_ROWS_PER_RESOURCE} more fields |")
    return lines
