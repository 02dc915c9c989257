"""The cost and policy parts of a `StackDiff`'s Markdown: the $/h change for the first line, one plain line
each for the cost (against `demand.budgetUsdPerHour`) and the policy verdict, and their folded details (the
$/h per item with a chart, the violations the change brings or resolves). An unknown price reads "unknown",
in every total it enters.
"""

from __future__ import annotations

import json
from typing import Optional

from tools.pr_diff.costs import Cost, CostChange
from tools.pr_diff.demand import DemandCriteria
from tools.pr_diff.markdown_fields import cell
from tools.pr_diff.records import Violation
from tools.pr_diff.stack_diff import StackDiff

UNKNOWN = "unknown"
PRICES = "on-demand list prices at desired size"
PRICES_SOURCE = (
    "On-demand list prices at desired size (outputs `nodePools[].usdPerHour`, `endpoints[].usdPerHour`); "
    "unknown: no published price."
)


def usd(value: Optional[float]) -> str:
    return UNKNOWN if value is None else f"${value:,.2f}"


def _percent(value: float) -> str:
    return f"{value:+.0f}%" if abs(value) >= 10 else f"{value:+.1f}%"


def cost_headline(cost: CostChange) -> str:
    """`**+177.23 $/h (+100%)**`, `**+50.00 $/h** (from $0)`, `**±0 $/h**`, or `**$/h change unknown**`."""
    if cost.change is None:
        return "**$/h change unknown**"
    if abs(cost.change) < 0.005:
        return "**±0 $/h**"
    if cost.percent is None:
        return f"**{cost.change:+,.2f} $/h** (from $0)"
    return f"**{cost.change:+,.2f} $/h ({_percent(cost.percent)})**"


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
    if cost.change is None:
        line = (
            f"💲 **$/h change unknown**: {_unknown_changes(cost)}. The priced items were "
            f"{usd(cost.priced_total('base'))}/h and are {usd(cost.priced_total('head'))}/h."
        )
    elif cost.head_total is None or cost.base_total is None:
        line = (
            f"💲 {cost_headline(cost)}: {usd(cost.priced_total('base'))}/h → {usd(cost.priced_total('head'))}/h "
            f"for the priced items, {PRICES}; {_unpriced_unchanged(cost)}, so the totals are unknown."
        )
    else:
        line = f"💲 {cost_headline(cost)}: {usd(cost.base_total)}/h → {usd(cost.head_total)}/h, {PRICES}."
    budget = criteria.budget_usd_per_hour if criteria else None
    if budget is not None:
        if cost.head_total is None:
            line += f" Against `demand.budgetUsdPerHour` (${budget:,.2f}): unknown."
        elif cost.head_total > budget:
            line += f" ❌ Above `demand.budgetUsdPerHour` (${budget:,.2f}) by ${cost.head_total - budget:,.2f}."
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
    return [
        "<details><summary>💲 $/h per item</summary>",
        "",
        "| item | base | head | change |",
        "|---|---|---|---|",
        *rows,
        "",
        *_chart(cost, stack),
        PRICES_SOURCE,
        "",
        "</details>",
        "",
    ]


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
    lines = [
        f"<details><summary>🛡️ Policy violations: {len(diff.new_violations)} new, "
        f"{len(diff.resolved_violations)} resolved</summary>",
        "",
    ]
    if diff.new_violations:
        lines += ["New:", "", *[_violation_line(v) for v in diff.new_violations], ""]
    if diff.resolved_violations:
        lines += ["Resolved:", "", *[_violation_line(v) for v in diff.resolved_violations], ""]
    return [*lines, "</details>", ""]
