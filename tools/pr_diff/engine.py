"""The real engine's word on a change (`tools.e2e.engine_diff`: the built CLI and Kubernetes provider, a
control plane on loopback, the base deployed): its plan, one operation per resource, held against the
offline diff's, so that each resource the two see differently is named in the comment's consequences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tools.pr_diff.stack_diff import StackDiff

# The offline diff's kinds as the engine's operations (`tools.e2e.engine_state.engine_plan`).
ENGINE_OPERATION = {"add": "create", "remove": "delete", "change": "update", "replace": "replace"}
UNCHANGED = "no change"


@dataclass(frozen=True)
class EngineReport:
    label: str  # which engine produced it
    text: str  # its `preview --diff` output
    output_link: str  # where the whole output is (Markdown)
    disagreements: tuple[str, ...]
    ran: bool = True  # False: the engine could not preview (its error is `text`)


def disagreements(diff: StackDiff, plan: Mapping[str, str]) -> tuple[str, ...]:
    """Each resource the offline diff and the engine's plan see differently, as `**name**: offline …, engine …`."""
    offline = {change.name: change.kind for change in diff.resources}
    found = []
    for name in sorted(offline.keys() | plan.keys()):
        ours = ENGINE_OPERATION[offline[name]] if name in offline else UNCHANGED
        theirs = plan[name].split(" ")[0] if name in plan else UNCHANGED  # `replace (create-first)`: replace
        if ours != theirs:
            found.append(f"**{name}**: offline {ours}, engine {plan.get(name, UNCHANGED)}")
    return tuple(found)
