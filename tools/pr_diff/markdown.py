"""A `StackDiff` as Markdown for a pull-request comment: counts first, details folded when large.

GitHub caps a comment at 65,536 characters and one comment holds every stack: past `MAX_CHARS`,
`render_markdown` leaves out the field tables, then the resource lists; `tools/diff.py` keeps the whole
diff beside the comment text in the CI artifact.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from tools.pr_diff.changes import MISSING, FieldChange
from tools.pr_diff.records import Violation
from tools.pr_diff.stack_diff import Cost, CostLine, ResourceChange, StackDiff

MAX_CHARS = 30_000  # per stack: a comment holds both stacks
DETAILS = ("fields", "names", "counts")  # from the whole diff down to counts only
MAX_ATTENTION_ITEMS = 25
INLINE_FIELD_ROWS = 40  # more field rows than this in the whole diff: fold each resource's table
FOLD_RESOURCES = 10  # more resources than this in a section: fold the section
MAX_ROWS_PER_RESOURCE = 60
VALUE_CHARS = 120
ACTIONS = {
    "replace": ("♻️", "replaced"),
    "remove": ("➖", "removed"),
    "add": ("➕", "added"),
    "change": ("✏️", "changed"),
}
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


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def code(value: Any) -> str:
    if value is MISSING:
        return "*(absent)*"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"
    return _cell(f"`` {text} ``" if "`" in text else f"`{text}`")


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
        return _cell(change.note.replace("<", "&lt;"))
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
        lines.append(f"| {topic(change)} | `{_cell(change.path)}` | {describe(change)} |")
    if len(fields) > MAX_ROWS_PER_RESOURCE:
        lines.append(f"| | … | {len(fields) - MAX_ROWS_PER_RESOURCE} more fields |")
    return lines


def _resource_title(change: ResourceChange) -> str:
    topics = sorted({t for t in (topic(f) for f in change.fields) if t})
    about = f" ({', '.join(topics)})" if topics else ""
    count = f" — {len(change.fields)} field{'s' if len(change.fields) != 1 else ''}{about}" if change.fields else ""
    return f"`{change.type}` **{change.name}**{count}"


def _resource_block(change: ResourceChange, fold: bool, compact: bool) -> list[str]:
    lines = [f"- {_resource_title(change)}"]
    lines += [f"  - ♻️ {reason}" for reason in change.reasons]
    lines += [f"  - ⚠️ {warning}" for warning in change.warnings]
    lines += [f"  - ℹ️ {note}" for note in change.notes]
    if change.summary:
        lines.append(f"  - ↪️ {change.summary}")
    if compact or not change.fields:
        return lines
    table = field_table(change.fields)
    if fold:
        return (
            lines
            + ["", "  <details><summary>fields</summary>", ""]
            + [f"  {t}" for t in table]
            + ["", "  </details>", ""]
        )
    return lines + [""] + [f"  {t}" for t in table] + [""]


def _section(kind: str, changes: list[ResourceChange], fold_fields: bool, compact: bool) -> list[str]:
    if not changes:
        return []
    emoji, label = ACTIONS[kind]
    heading = f"#### {emoji} {label.capitalize()} ({len(changes)})"
    if kind in ("add", "remove"):
        body = ["| type | name | what |", "|---|---|---|"] + [
            f"| `{c.type}` | {c.name} | {_cell(_short('; '.join(filter(None, [c.summary, *c.warnings]))))} |"
            for c in changes
        ]
    else:
        body = [line for c in changes for line in _resource_block(c, fold_fields, compact)]
    if len(changes) > FOLD_RESOURCES:
        return [heading, "", f"<details><summary>{len(changes)} resources</summary>", "", *body, "", "</details>", ""]
    return [heading, "", *body, ""]


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def _cost_cell(cost: Cost | None) -> str:
    return "—" if cost is None else f"{_usd(cost.usd_per_hour)} ({_cell(cost.detail)})"


def cost_section(costs: tuple[CostLine, ...]) -> list[str]:
    if not costs:
        return []
    lines = ["#### 💲 Cost per hour", "", "| item | base | head | change |", "|---|---|---|---|"]
    totals = {"base": 0.0, "head": 0.0}
    unpriced = {"base": False, "head": False}
    for line in costs:
        for side in totals:
            cost = getattr(line, side)
            if cost is not None:
                unpriced[side] = unpriced[side] or cost.usd_per_hour is None
                totals[side] += cost.usd_per_hour or 0.0
        old = line.base.usd_per_hour if line.base else 0.0
        new = line.head.usd_per_hour if line.head else 0.0
        delta = "n/a" if old is None or new is None else ("—" if abs(new - old) < 0.005 else f"{new - old:+,.2f}")
        lines.append(f"| {line.item} | {_cost_cell(line.base)} | {_cost_cell(line.head)} | {delta} |")
    total = {side: ("≥ " if unpriced[side] else "") + _usd(totals[side]) for side in totals}
    change = totals["head"] - totals["base"]
    lines.append(
        f"| **total** | **{total['base']}** | **{total['head']}** | **{change:+,.2f}**"
        f"{' (priced items)' if any(unpriced.values()) else ''} |"
    )
    lines += [
        "",
        (
            "On-demand list prices at desired size (outputs `nodePools[].usdPerHourDesired`, "
            "`endpoints[].costPerHourUsd`); n/a: no published price."
        ),
        "",
    ]
    return lines


def _violation_line(violation: Violation) -> str:
    return (
        f"- `{violation.level}` **{violation.policy}** on `{_cell(violation.resource)}`: "
        f"{_cell(violation.message.replace('<', '&lt;'))}"
    )


def policy_section(diff: StackDiff) -> list[str]:
    mandatory = diff.head_mandatory
    advisory = len(diff.head_violations) - len(mandatory)
    verdict = (
        f"❌ **{len(mandatory)} mandatory violation(s)**: `pulumi preview --policy-pack policy` fails"
        if mandatory
        else "✅ no mandatory violation"
    )
    lines = [
        "#### 🛡️ Policy pack",
        "",
        (
            f"{verdict}; {advisory} advisory (base: "
            f"{sum(v.mandatory for v in diff.base_violations)} mandatory, "
            f"{sum(not v.mandatory for v in diff.base_violations)} advisory)."
        ),
        "",
    ]
    if diff.new_violations:
        lines += ["New:", "", *[_violation_line(v) for v in diff.new_violations], ""]
    if diff.resolved_violations:
        lines += ["Resolved:", "", *[_violation_line(v) for v in diff.resolved_violations], ""]
    return lines


def _attention(diff: StackDiff) -> list[str]:
    items = [f"{c.kind} `{c.type}` **{c.name}**: {w}" for c in diff.resources for w in c.warnings]
    items += [f"IAM widens on **{c.name}**: `{f.path}`" for c in diff.resources for f in c.fields if f.widens]
    items += [f"new IAM policy **{c.name}** grants access" for c in diff.resources if c.grants_access]
    items += [f"new mandatory violation: **{v.policy}** on `{v.resource}`" for v in diff.new_violations if v.mandatory]
    if not items:
        return []
    more = [f"- … and {len(items) - MAX_ATTENTION_ITEMS} more"] if len(items) > MAX_ATTENTION_ITEMS else []
    return ["#### ⚠️ Needs attention", "", *[f"- {_cell(i)}" for i in items[:MAX_ATTENTION_ITEMS]], *more, ""]


def _chart(counts: dict[str, int], stack: str) -> list[str]:
    if sum(1 for n in counts.values() if n) < 2:
        return []
    slices = [f'    "{kind}" : {n}' for kind, n in counts.items() if n]
    return ["```mermaid", f"pie showData title {stack}: resources by action", *slices, "```", ""]


def _render(diff: StackDiff, base_label: str, head_label: str, detail: str) -> str:
    counts = {kind: len(diff.of_kind(kind)) for kind in ACTIONS}
    title = " · ".join(f"{emoji} {counts[kind]} {label}" for kind, (emoji, label) in ACTIONS.items())
    lines = [
        f"### Stack `{diff.stack}`: {title}",
        "",
        (
            f"Offline render (mock runtime) of {base_label} → {head_label}. "
            "`pulumi preview --diff` in the preview job is authoritative for what the cloud holds."
        ),
        "",
    ]
    if not diff.resources:
        lines += ["No resource changes.", ""]
    else:
        lines += [
            "| action | resources |",
            "|---|---|",
            *[f"| {ACTIONS[k][0]} {ACTIONS[k][1]} | {n} |" for k, n in counts.items()],
            "",
        ]
        lines += _chart(counts, diff.stack)
    lines += _attention(diff) + cost_section(diff.costs) + policy_section(diff)
    fold_fields = sum(len(c.fields) for c in diff.resources) > INLINE_FIELD_ROWS
    if detail != "counts":
        for kind in ACTIONS:
            lines += _section(kind, diff.of_kind(kind), fold_fields, compact=detail == "names")
    if diff.outputs and detail == "fields":
        lines += [
            "<details><summary>📤 Stack outputs changed</summary>",
            "",
            *field_table(diff.outputs),
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def render_markdown(diff: StackDiff, base_label: str, head_label: str, max_chars: int | None = MAX_CHARS) -> str:
    """The whole diff, or, past `max_chars`, without field tables, then without resource lists."""
    for detail in DETAILS:
        text = _render(diff, base_label, head_label, detail)
        if max_chars is None or len(text) <= max_chars or detail == DETAILS[-1]:
            break
    if detail == DETAILS[0]:
        return text
    left_out = "field tables" if detail == "names" else "field tables and resource lists"
    return text + f"\n*{left_out.capitalize()} left out to fit a comment: the full diff is in the workflow artifact.*\n"
