"""The cost and policy-pack sections of a `StackDiff`'s Markdown: $/h per item, base vs head, and the
policy verdict with the violations the change brings or resolves.
"""

from __future__ import annotations

from tools.pr_diff.costs import Cost, CostLine
from tools.pr_diff.markdown_fields import cell
from tools.pr_diff.records import Violation
from tools.pr_diff.stack_diff import StackDiff


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def _cost_cell(cost: Cost | None) -> str:
    return "—" if cost is None else f"{_usd(cost.usd_per_hour)} ({cell(cost.detail)})"


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
            "On-demand list prices at desired size (outputs `nodePools[].usdPerHour`, "
            "`endpoints[].usdPerHour`); n/a: no published price."
        ),
        "",
    ]
    return lines


def _violation_line(violation: Violation) -> str:
    return (
        f"- `{violation.level}` **{violation.policy}** on `{cell(violation.resource)}`: "
        f"{cell(violation.message.replace('<', '&lt;'))}"
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
