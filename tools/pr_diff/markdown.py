"""A `StackDiff` as Markdown for a pull-request comment: consequences first (the headline, then one line
each), the tables folded in `<details>` below. One comment holds every stack: past `MAX_BYTES` the field
tables, then the resource lists are left out, and what still does not fit is cut by `bound.bound_markdown`.
An unknown price reads "unknown" in every total it enters.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any, Optional

from tools.pr_diff.bound import bound_markdown
from tools.pr_diff.changes import MISSING, FieldChange
from tools.pr_diff.costs import Cost, CostChange
from tools.pr_diff.demand import DemandCriteria
from tools.pr_diff.engine import EngineReport
from tools.pr_diff.pool_rolls import PoolRoll
from tools.pr_diff.records import Violation
from tools.pr_diff.stack_diff import ResourceChange, StackDiff

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


UNKNOWN = "unknown"
PRICES = "on-demand list prices at desired size"
PRICES_SOURCE = (
    "On-demand list prices at desired size (outputs `nodePools[].usdPerHour`, `endpoints[].usdPerHour`); "
    "unknown: no published price."
)


def usd(value: Optional[float]) -> str:
    return UNKNOWN if value is None else f"${value:,.2f}"


def cost_headline(cost: CostChange) -> str:
    """`**+177.23 $/h (+100%)**`, `**+50.00 $/h** (from $0)`, `**±0 $/h**`, or `**$/h change unknown**`."""
    if cost.change is None:
        return "**$/h change unknown**"
    if abs(cost.change) < 0.005:
        return "**±0 $/h**"
    if cost.percent is None:
        return f"**{cost.change:+,.2f} $/h** (from $0)"
    percent = f"{cost.percent:+.0f}%" if abs(cost.percent) >= 10 else f"{cost.percent:+.1f}%"
    return f"**{cost.change:+,.2f} $/h ({percent})**"


def _side(cost: Optional[Cost]) -> str:
    return "absent" if cost is None else f"{usd(cost.usd_per_hour)}/h ({cost.detail})"


def _unknown_changes(cost: CostChange) -> str:
    """The items whose change is unknown, each base → head."""
    return "; ".join(
        f"{line.item} {_side(line.base)} → {_side(line.head)}" for line in cost.lines if line.change is None
    )


def _unpriced_unchanged(cost: CostChange) -> str:
    names = [f"{line.item} ({line.head.detail})" for line in cost.unpriced("head") if line.change == 0 and line.head]
    return f"{', '.join(names)} {'has' if len(names) == 1 else 'have'} no published price (unchanged)"


def cost_line(cost: CostChange, criteria: Optional[DemandCriteria]) -> str:
    if not cost.lines:
        return (
            "💲 **±0 $/h**: no GPU pool or SageMaker endpoint of this stack is priced (its nodes are not the stack's)."
        )
    base, head = cost.total("base"), cost.total("head")
    if cost.change is None:
        line = (
            f"💲 **$/h change unknown**: {_unknown_changes(cost)}. The priced items were "
            f"{usd(cost.priced_total('base'))}/h and are {usd(cost.priced_total('head'))}/h."
        )
    elif head is None or base is None:
        line = (
            f"💲 {cost_headline(cost)}: {usd(cost.priced_total('base'))}/h → {usd(cost.priced_total('head'))}/h "
            f"for the priced items, {PRICES}; {_unpriced_unchanged(cost)}, so the totals are unknown."
        )
    else:
        line = f"💲 {cost_headline(cost)}: {usd(base)}/h → {usd(head)}/h, {PRICES}."
    budget = criteria.budget_usd_per_hour if criteria else None
    if budget is not None:
        if head is None:
            line += f" Against `demand.budgetUsdPerHour` (${budget:,.2f}): unknown."
        elif head > budget:
            line += f" ❌ Above `demand.budgetUsdPerHour` (${budget:,.2f}) by ${head - budget:,.2f}."
        else:
            line += f" Within `demand.budgetUsdPerHour` (${budget:,.2f})."
    return line


def _cost_cell(cost: Optional[Cost]) -> str:
    return "—" if cost is None else f"{usd(cost.usd_per_hour)} ({cell(cost.detail)})"


def _chart(cost: CostChange, stack: str) -> list[str]:
    """Each priced item's $/h in base and head as bars side by side, where the change is known and not zero."""
    bars = [
        (f"{line.item.replace('`', '')} {side}", cost_side.usd_per_hour if cost_side else 0.0)
        for line in cost.lines
        if line.change is not None and all(c is None or c.usd_per_hour is not None for c in (line.base, line.head))
        for side, cost_side in (("base", line.base), ("head", line.head))
    ]
    if not cost.change or not bars:
        return []
    return [
        "```mermaid",
        "xychart-beta",
        f'    title "{stack}: $/h per priced item, base and head"',
        f"    x-axis [{', '.join(json.dumps(label) for label, _ in bars)}]",
        '    y-axis "$/h"',
        f"    bar [{', '.join(f'{value or 0.0:.2f}' for _, value in bars)}]",
        "```",
        "",
    ]


def cost_details(cost: CostChange, stack: str) -> list[str]:
    if not cost.lines:
        return []
    rows = []
    for line in cost.lines:
        change = line.change
        delta = UNKNOWN if change is None else ("—" if abs(change) < 0.005 else f"{change:+,.2f}")
        rows.append(f"| {line.item} | {_cost_cell(line.base)} | {_cost_cell(line.head)} | {delta} |")
    table = ["| item | base | head | change |", "|---|---|---|---|", *rows]
    return _folded("💲 $/h per item", *table, "", *_chart(cost, stack), PRICES_SOURCE, "")


def _folded(summary: str, *body: str) -> list[str]:
    """`body` in a collapsed `<details>` block under `summary`."""
    return [f"<details><summary>{summary}</summary>", "", *body, "</details>", ""]


def _violation_line(violation: Violation) -> str:
    return (
        f"- `{violation.level}` **{violation.policy}** on `{cell(violation.resource)}`: "
        f"{cell(violation.message.replace('<', '&lt;'))}"
    )


def policy_line(diff: StackDiff) -> str:
    mandatory = diff.head_mandatory
    advisory = len(diff.head_violations) - len(mandatory)
    verdict = (
        f"❌ **{len(mandatory)} mandatory violation(s)**: `pulumi preview --policy-pack policy` fails"
        if mandatory
        else "✅ no mandatory violation"
    )
    return (
        f"🛡️ Policy pack: {verdict}; {advisory} advisory ({len(diff.new_violations)} new, "
        f"{len(diff.resolved_violations)} resolved; base: {sum(v.mandatory for v in diff.base_violations)} "
        f"mandatory, {sum(not v.mandatory for v in diff.base_violations)} advisory)."
    )


def policy_details(diff: StackDiff) -> list[str]:
    if not diff.new_violations and not diff.resolved_violations:
        return []
    sides = (("New:", diff.new_violations), ("Resolved:", diff.resolved_violations))
    lines = [line for title, found in sides if found for line in (title, "", *map(_violation_line, found), "")]
    summary = f"🛡️ Policy violations: {len(diff.new_violations)} new, {len(diff.resolved_violations)} resolved"
    return _folded(summary, *lines)


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
    table = [f"  {row}" for row in field_table(change.fields)]
    if fold:
        return [*lines, "", "  <details><summary>fields</summary>", "", *table, "", "  </details>", ""]
    return [*lines, "", *table, ""]


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
        return [heading, "", *_folded(f"{len(changes)} resources", *body, "")]
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
    return [
        f"❌ **`{miss.target}`** ({miss.status} target) fails {diff.stack}'s demand: "
        f"{'; '.join(miss.failures)}. {usd(miss.usd_per_million)} per 1M output tokens."
        for miss in diff.demand_misses
    ]


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
        return _folded(f"Resources: {counts}", "Resource lists left out to fit a comment.", "")
    fold_fields = sum(len(c.fields) for c in diff.resources) > INLINE_FIELD_ROWS
    body = [line for kind in ACTIONS for line in _section(kind, diff.of_kind(kind), fold_fields, detail == "names")]
    return _folded(f"Resources: {counts}", *body)


def _outputs(diff: StackDiff, detail: str) -> list[str]:
    if not diff.outputs or detail != "fields":
        return []
    return _folded("📤 Stack outputs changed", *field_table(diff.outputs), "")


def _engine_details(engine: Optional[EngineReport]) -> list[str]:
    if engine is None or not engine.text.strip():
        return []
    fence = "````"
    return _folded(f"⚙️ Engine preview: {engine.label}", fence, engine.text.strip().replace(fence, "'''"), fence, "")


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
