"""Published figures from an upstream recipe directory's Markdown: the performance table and the criteria.

A performance table is any Markdown table with a `Recipe` column (a path such as
`vllm/agg-b200-dflash/deploy.yaml`) and at least one figure column, found by header name:
`Concurrency`, `TTFT p50 (ms)` (or `(s)`), `Output tok/s/GPU`, `Tok/s/user`, `Synthetic AL` (the fixed
acceptance length the row was measured with, `rejection_sample_method: synthetic`; 0 for a row without
speculative decoding). A missing column or an empty, `-` or `n/a` cell is an unknown figure; any other cell
that is not a number is an error naming the file, line and column. The same recipe in two tables must carry
the same figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

UNPUBLISHED_CELLS = {"", "-", "—", "–", "n/a", "na", "tbd", "unknown", "?"}
FIGURE_COLUMNS = {
    "concurrency": ("concurrency", 1.0),
    "ttft p50 (ms)": ("ttftP50Ms", 1.0),
    "ttft p50 (s)": ("ttftP50Ms", 1000.0),
    "output tok/s/gpu": ("outputTokensPerSecondPerGpu", 1.0),
    "tok/s/user": ("tokensPerSecondPerUser", 1.0),
    "synthetic al": ("syntheticAcceptanceLength", 1.0),
}
FIGURES = (
    "concurrency",
    "ttftP50Ms",
    "outputTokensPerSecondPerGpu",
    "tokensPerSecondPerUser",
    "syntheticAcceptanceLength",
)
NONE_WHEN_ZERO = {"syntheticAcceptanceLength"}  # 0: measured without speculative decoding
MIN_TPS_PER_USER = re.compile(r"tok/s/user`?\s*>=\s*([0-9]+(?:\.[0-9]+)?)", re.IGNORECASE)
MAX_TTFT_P50 = re.compile(r"TTFT p50`?\s*<\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s)\b", re.IGNORECASE)


class TableError(ValueError):
    """A table cell that is neither a number nor an unpublished marker."""


@dataclass(frozen=True)
class Row:
    target_id: str
    figures: dict[str, Optional[float]]
    source: str  # `perf/README.md:31`


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _is_separator(line: str) -> bool:
    return bool(re.fullmatch(r"\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*\|?", line.strip()))


def target_id_of(cell: str) -> str:
    """`` `vllm/agg-b200-dflash/deploy.yaml` `` or a Markdown link to it -> `vllm/agg-b200-dflash`."""
    link = re.fullmatch(r"\[([^\]]*)\]\(([^)]*)\)", cell)
    text = (link.group(1) or link.group(2)) if link else cell
    path = text.strip().strip("`").strip().removeprefix("./")
    path = re.sub(r"/(deploy\.ya?ml)?$", "", path)
    return re.sub(r"\.ya?ml$", "", path)


def _number(cell: str, where: str, zero_is_none: bool = False) -> Optional[float]:
    text = cell.replace("**", "").replace("`", "").replace(",", "").strip()
    if text.lower() in UNPUBLISHED_CELLS:
        return None
    try:
        value = float(text)
    except ValueError:
        raise TableError(f"{where}: {cell!r} is neither a number nor an unpublished marker (-, n/a)") from None
    if value == 0 and zero_is_none:
        return None
    if value <= 0:
        raise TableError(f"{where}: {cell!r} is not a positive figure")
    return value


def _table_rows(lines: list[str], start: int, label: str) -> list[Row]:
    header = [h.lower() for h in _cells(lines[start])]
    recipe_column = header.index("recipe")
    columns = {index: FIGURE_COLUMNS[name] for index, name in enumerate(header) if name in FIGURE_COLUMNS}
    rows: list[Row] = []
    for number in range(start + 2, len(lines)):
        if not lines[number].lstrip().startswith("|"):
            break
        cells = _cells(lines[number])
        figures: dict[str, Optional[float]] = dict.fromkeys(FIGURES)
        for index, (field, scale) in columns.items():
            where = f"{label}:{number + 1}, column {header[index]!r}"
            value = _number(cells[index], where, field in NONE_WHEN_ZERO) if index < len(cells) else None
            figures[field] = None if value is None else value * scale
        rows.append(Row(target_id_of(cells[recipe_column]), figures, f"{label}:{number + 1}"))
    return rows


def rows_in(text: str, label: str) -> list[Row]:
    """Every row of every performance table in one Markdown text."""
    lines = text.splitlines()
    rows: list[Row] = []
    for index in range(len(lines) - 1):
        header = [h.lower() for h in _cells(lines[index])] if lines[index].lstrip().startswith("|") else []
        if "recipe" in header and any(h in FIGURE_COLUMNS for h in header) and _is_separator(lines[index + 1]):
            rows += _table_rows(lines, index, label)
    return rows


def published_figures(upstream: Path) -> dict[str, Row]:
    """Target id -> its row, from every Markdown file of the upstream directory."""
    found: dict[str, Row] = {}
    for path in sorted(upstream.rglob("*.md")):
        for row in rows_in(path.read_text(), path.relative_to(upstream).as_posix()):
            earlier = found.get(row.target_id)
            if earlier is not None and earlier.figures != row.figures:
                raise TableError(f"{row.source}: {row.target_id} has other figures than at {earlier.source}")
            found.setdefault(row.target_id, row)
    return found


def published_criteria(upstream: Path) -> dict[str, float]:
    """The pass criteria the upstream Markdown states (`tok/s/user >= 50`, `TTFT p50 < 5s`), where it does."""
    criteria: dict[str, float] = {}
    for path in sorted(upstream.rglob("*.md")):
        text = path.read_text()
        if (tps := MIN_TPS_PER_USER.search(text)) and "minTokensPerSecondPerUser" not in criteria:
            criteria["minTokensPerSecondPerUser"] = float(tps.group(1))
        if (ttft := MAX_TTFT_P50.search(text)) and "maxTtftP50Ms" not in criteria:
            criteria["maxTtftP50Ms"] = float(ttft.group(1)) * (1000.0 if ttft.group(2).lower() == "s" else 1.0)
    return criteria
