"""A `StackDiff` as Markdown for a pull-request comment: counts first, details folded when large.

GitHub caps a comment at 65,536 characters and one comment holds every stack: past `MAX_CHARS`,
`render_markdown` leaves out the field tables, then the resource lists; `tools/diff.py` keeps the whole
diff beside the comment text in the CI artifact.
"""

from __future__ import annotations

from tools.pr_diff.markdown_cost_policy import cost_section, policy_section
from tools.pr_diff.markdown_fields import cell, field_table, topic
from tools.pr_diff.stack_diff import ResourceChange, StackDiff

MAX_CHARS = 30_000  # per stack: a comment holds both stacks
DETAILS = ("fields", "names", "counts")  # from the whole diff down to counts only
MAX_ATTENTION_ITEMS = 25
INLINE_FIELD_ROWS = 40  # more field rows than this in the whole diff: fold each resource's table
FOLD_RESOURCES = 10  # more resources than this in a section: fold the section
ACTIONS = {
    "replace": ("♻️", "replaced"),
    "remove": ("➖", "removed"),
    "add": ("➕", "added"),
    "change": ("✏️", "changed"),
}


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
            f"| `{c.type}` | {c.name} | {cell(_short('; '.join(filter(None, [c.summary, *c.warnings]))))} |"
            for c in changes
        ]
    else:
        body = [line for c in changes for line in _resource_block(c, fold_fields, compact)]
    if len(changes) > FOLD_RESOURCES:
        return [heading, "", f"<details><summary>{len(changes)} resources</summary>", "", *body, "", "</details>", ""]
    return [heading, "", *body, ""]


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _attention(diff: StackDiff) -> list[str]:
    items = list(diff.engine_notes) + list(diff.warnings)
    items += [f"{c.kind} `{c.type}` **{c.name}**: {w}" for c in diff.resources for w in c.warnings]
    items += [f"IAM widens on **{c.name}**: `{f.path}`" for c in diff.resources for f in c.fields if f.widens]
    items += [f"new IAM policy **{c.name}** grants access" for c in diff.resources if c.grants_access]
    items += [f"new mandatory violation: **{v.policy}** on `{v.resource}`" for v in diff.new_violations if v.mandatory]
    if not items:
        return []
    more = [f"- … and {len(items) - MAX_ATTENTION_ITEMS} more"] if len(items) > MAX_ATTENTION_ITEMS else []
    return ["#### ⚠️ Needs attention", "", *[f"- {cell(i)}" for i in items[:MAX_ATTENTION_ITEMS]], *more, ""]


def _node_rolls(diff: StackDiff) -> list[str]:
    """GPU pools whose every node the change replaces: the costliest day-2 effect, stated first."""
    if not diff.node_rolls:
        return []
    return ["#### 🔁 GPU nodes replaced", "", *[f"- {cell(roll.line())}" for roll in diff.node_rolls], ""]


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
    lines += _attention(diff) + _node_rolls(diff) + cost_section(diff.costs) + policy_section(diff)
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
