"""A `StackDiff` as Markdown for a pull-request comment: consequences first, details folded below.

The first line of each stack is the change in $/h (and %) with every GPU pool the change replaces node by
node; the lines under it state each consequence in plain text: the cost against the stack's budget, each
pool's roll (minutes, GPU-hours, the targets it interrupts), each new or changed target that fails the
stack's demand, the policy verdict, what `pulumi up` refuses or needs attention, and the real engine's
word where it ran. Resource tables, field diffs, the cost table and chart and the outputs follow in
collapsed `<details>` sections. One comment holds every stack: past `MAX_BYTES` the field tables, then the
resource lists are left out, and what still does not fit is cut by `bound.bound_markdown` (blocks closed,
what was cut named, the full diff linked).
"""

from __future__ import annotations

from typing import Optional

from tools.pr_diff.bound import bound_markdown
from tools.pr_diff.engine import EngineReport
from tools.pr_diff.markdown_cost_policy import cost_details, cost_headline, cost_line, policy_details, policy_line
from tools.pr_diff.markdown_fields import cell, field_table, topic
from tools.pr_diff.pool_rolls import PoolRoll
from tools.pr_diff.stack_diff import ResourceChange, StackDiff

MAX_BYTES = 20_000  # per stack: a comment holds the three stacks within GitHub's 65,536 characters
DETAILS = ("fields", "names", "counts")  # from the whole diff down to counts only
MAX_ATTENTION_ITEMS = 25
INLINE_FIELD_ROWS = 40  # more field rows than this in the whole diff: fold each resource's table
FOLD_RESOURCES = 10  # more resources than this in a section: fold the section
LOCAL_FULL_DIFF = "`build/pr-diff/full/{stack}.md` (`make diff` writes it)"
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


def _hours(gpu_hours: float) -> str:
    return f"~{gpu_hours:.1f} GPU-hours"


def _roll_headline(rolls: tuple[PoolRoll, ...]) -> str:
    pools = ", ".join(f"`{r.roll.pool}` (~{r.roll.minutes:g} min, {_hours(r.roll.gpu_hours)})" for r in rolls)
    return f"every node replaced in GPU pool{'s' if len(rolls) > 1 else ''} {pools}"


def _roll_line(pool_roll: PoolRoll) -> str:
    roll = pool_roll.roll
    targets = ", ".join(f"`{t}`" for t in pool_roll.targets)
    interrupts = f"interrupts {targets}" if targets else "interrupts no serving target"
    return (
        f"🔁 **Every node of GPU pool `{roll.pool}` replaced**, one at a time: {roll.nodes} node"
        f"{'s' if roll.nodes != 1 else ''} x {roll.gpus_per_node} GPUs, ~{roll.minutes:g} min, "
        f"{_hours(roll.gpu_hours)} out of service{' (estimate)' if roll.estimated else ''}; {interrupts}. "
        f"Because {'; '.join(roll.why)}."
    )


def _demand_lines(diff: StackDiff) -> list[str]:
    lines = []
    for miss in diff.demand_misses:
        price = "unknown" if miss.usd_per_million is None else f"${miss.usd_per_million:,.2f}"
        lines.append(
            f"❌ **`{miss.target}`** ({miss.status} target) fails {diff.stack}'s demand: "
            f"{'; '.join(miss.failures)}. {price} per 1M output tokens."
        )
    return lines


def _attention(diff: StackDiff) -> list[str]:
    items = [f"❌ {note}" for note in diff.engine_notes] + [f"⚠️ {w}" for w in diff.warnings]
    items += [f"⚠️ {c.kind} `{c.type}` **{c.name}**: {w}" for c in diff.resources for w in c.warnings]
    items += [f"⚠️ IAM widens on **{c.name}**: `{f.path}`" for c in diff.resources for f in c.fields if f.widens]
    items += [f"⚠️ new IAM policy **{c.name}** grants access" for c in diff.resources if c.grants_access]
    items += [
        f"❌ new mandatory violation: **{v.policy}** on `{v.resource}`" for v in diff.new_violations if v.mandatory
    ]
    if len(items) > MAX_ATTENTION_ITEMS:
        items = [*items[:MAX_ATTENTION_ITEMS], f"… and {len(items) - MAX_ATTENTION_ITEMS} more"]
    return items


def _engine_lines(engine: Optional[EngineReport]) -> list[str]:
    if engine is None:
        return []
    if not engine.ran:
        return [f"⚠️ **The engine could not preview this change**; its output: {engine.output_link}."]
    count = len(engine.disagreements)
    if count:
        shown = "; ".join(engine.disagreements[:MAX_ATTENTION_ITEMS])
        more = f"; and {count - MAX_ATTENTION_ITEMS} more" if count > MAX_ATTENTION_ITEMS else ""
        return [
            f"⚠️ **The engine's `pulumi preview` disagrees with this offline diff** on {count} "
            f"resource{'s' if count != 1 else ''}: {shown}{more}. Its output: {engine.output_link}."
        ]
    return [f"⚙️ The engine's `pulumi preview` agrees with this offline diff; its output: {engine.output_link}."]


def headline(diff: StackDiff) -> str:
    """The first line: the $/h change, the pools replaced node by node, the demand and policy verdicts."""
    parts = [cost_headline(diff.cost)]
    if diff.pool_rolls:
        parts.append(_roll_headline(diff.pool_rolls))
    if diff.demand_misses:
        count = len(diff.demand_misses)
        parts.append(f"{count} target{'s' if count != 1 else ''} below demand")
    if diff.head_mandatory:
        parts.append(f"{len(diff.head_mandatory)} mandatory policy violation(s)")
    if diff.engine_notes:
        parts.append("`pulumi up` refuses it")
    if not diff.resources:
        parts.append("no resource changes")
    return f"### `{diff.stack}`: " + " · ".join(parts)


def consequences(diff: StackDiff, engine: Optional[EngineReport]) -> list[str]:
    items = [
        cost_line(diff.cost, diff.criteria),
        *(_roll_line(r) for r in diff.pool_rolls),
        *_demand_lines(diff),
        policy_line(diff),
        *_attention(diff),
        *_engine_lines(engine),
    ]
    return [f"- {cell(item)}" for item in items]


def _resources(diff: StackDiff, detail: str) -> list[str]:
    if not diff.resources:
        return []
    counts = " · ".join(f"{emoji} {len(diff.of_kind(k))} {label}" for k, (emoji, label) in ACTIONS.items())
    if detail == "counts":
        return [
            f"<details><summary>Resources: {counts}</summary>",
            "",
            "Resource lists left out to fit a comment.",
            "",
            "</details>",
            "",
        ]
    fold_fields = sum(len(c.fields) for c in diff.resources) > INLINE_FIELD_ROWS
    body = [line for kind in ACTIONS for line in _section(kind, diff.of_kind(kind), fold_fields, detail == "names")]
    return [f"<details><summary>Resources: {counts}</summary>", "", *body, "</details>", ""]


def _outputs(diff: StackDiff, detail: str) -> list[str]:
    if not diff.outputs or detail != "fields":
        return []
    return [
        "<details><summary>📤 Stack outputs changed</summary>",
        "",
        *field_table(diff.outputs),
        "",
        "</details>",
        "",
    ]


def _engine_details(engine: Optional[EngineReport]) -> list[str]:
    if engine is None or not engine.text.strip():
        return []
    fence = "````"
    return [
        f"<details><summary>⚙️ Engine preview: {engine.label}</summary>",
        "",
        fence,
        engine.text.strip().replace(fence, "'''"),
        fence,
        "",
        "</details>",
        "",
    ]


def _render(diff: StackDiff, base_label: str, head_label: str, detail: str, engine: Optional[EngineReport]) -> str:
    lines = [
        headline(diff),
        "",
        *consequences(diff, engine),
        "",
        (
            f"<sub>Offline render (mock runtime) of {base_label} → {head_label}; `pulumi preview --diff` against "
            "the deployed stack is the preview job's.</sub>"
        ),
        "",
        *cost_details(diff.cost, diff.stack),
        *policy_details(diff),
        *_resources(diff, detail),
        *_outputs(diff, detail),
        *_engine_details(engine),
    ]
    return "\n".join(lines).rstrip() + "\n"


def render_markdown(
    diff: StackDiff,
    base_label: str,
    head_label: str,
    max_bytes: Optional[int] = MAX_BYTES,
    full_diff: str = "",
    engine: Optional[EngineReport] = None,
) -> str:
    """The whole diff (`max_bytes` None), or, past `max_bytes`, without field tables, then without resource
    lists, then cut (`bound_markdown`); `full_diff` says where the whole diff is (Markdown)."""
    full_diff = full_diff or LOCAL_FULL_DIFF.format(stack=diff.stack)
    for detail in DETAILS:
        text = _render(diff, base_label, head_label, detail, engine)
        if max_bytes is None or len(text.encode()) <= max_bytes:
            break
    if detail != DETAILS[0]:
        left_out = "Field tables" if detail == "names" else "Field tables and resource lists"
        text += f"\n*{left_out} left out to fit a comment. The full diff: {full_diff}.*\n"
    return text if max_bytes is None else bound_markdown(text, max_bytes, full_diff)
