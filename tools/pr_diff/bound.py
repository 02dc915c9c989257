"""Cut Markdown to a size without breaking it: the PR comment's bound (GitHub takes 65,536 characters).

The cut falls between whole lines, never inside a table row, and never between a table's header and its
separator line; every `<details>` and code fence left open is closed; a note says how much was cut, which
sections it held, and where the full text is. Sizes are UTF-8 bytes, which are never fewer than the
characters GitHub counts, so the workflow that posts the comment can check them with `wc -c`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_SUMMARY = re.compile(r"<summary>(.*?)</summary>")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")
MAX_NAMED_SECTIONS = 6
MAX_NAME_CHARS = 80


@dataclass(frozen=True)
class _State:
    """What is open after a line: a fence (its marker) and the `<details>` blocks (their summaries)."""

    fence: str = ""
    details: tuple[str, ...] = ()
    table_lines: int = 0  # lines of the table the prefix ends in (0: not in a table)


def _step(state: _State, line: str) -> _State:
    fence = _FENCE.match(line)
    if state.fence:
        closes = fence and fence.group(1)[0] == state.fence[0] and len(fence.group(1)) >= len(state.fence)
        return _State("" if closes and not line.strip().strip(state.fence[0]) else state.fence, state.details)
    if fence:
        return _State(fence.group(1), state.details)
    details = list(state.details)
    for match in re.finditer(r"<details>|</details>", line):
        if match.group() == "</details>":
            details = details[:-1]
        else:
            summary = _SUMMARY.search(line[match.end() :])
            details.append(summary.group(1) if summary else "")
    table = state.table_lines + 1 if line.lstrip().startswith("|") else 0
    return _State("", tuple(details), table)


def _name(text: str) -> str:
    text = re.sub(r"[*`<>]", "", text).strip()
    return text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1] + "…"


def _cut_sections(cut: list[str], open_details: tuple[str, ...]) -> list[str]:
    """The sections the cut lines held: the rest of the blocks left open, then those it holds whole."""
    names = [f"the rest of {_name(s)}" for s in open_details if s.strip()]
    for line in cut:
        found = _SUMMARY.search(line) or _HEADING.match(line.strip())
        if found and _name(found.group(1)):
            names.append(_name(found.group(1)))
    if len(names) > MAX_NAMED_SECTIONS:
        names = [*names[:MAX_NAMED_SECTIONS], f"{len(names) - MAX_NAMED_SECTIONS} more"]
    return names


def _ending(state: _State, cut: list[str], max_bytes: int, full_diff: str) -> str:
    closers = [state.fence] if state.fence else []
    closers += ["", *["</details>"] * len(state.details)] if state.details else []
    sections = _cut_sections(cut, state.details)
    held = f" ({'; '.join(sections)})" if sections else ""
    lines = sum(1 for line in cut if line.strip())
    note = (
        f"✂️ **Cut to fit a comment** ({max_bytes:,} bytes): {lines} more line{'s' if lines != 1 else ''}"
        f"{held}. The full diff: {full_diff}."
    )
    return "\n".join(["", *closers, "", note, ""])


def bound_markdown(text: str, max_bytes: int, full_diff: str) -> str:
    """`text` when it fits in `max_bytes`, else its longest whole-line prefix that fits with every open
    block closed and the note; `full_diff` (Markdown) says where the whole text is."""
    if len(text.encode()) <= max_bytes:
        return text
    lines = text.rstrip("\n").split("\n")
    states, sizes = [_State()], [0]
    for line in lines:
        states.append(_step(states[-1], line))
        sizes.append(sizes[-1] + len(line.encode()) + 1)
    longest = bisect.bisect_right(sizes, max_bytes) - 1  # the ending only shortens it from there
    for keep in range(longest, -1, -1):
        state = states[keep]
        if state.table_lines == 1:  # a header without its separator line is not a table
            continue
        ending = _ending(state, lines[keep:], max_bytes, full_diff)
        if sizes[keep] + len(ending.encode()) <= max_bytes:
            return "\n".join(lines[:keep]) + ending
    raise ValueError(f"{max_bytes} bytes cannot hold even the note that the text was cut")
