"""One upstream recipe directory (`recipes/nemotron-3.5-lightning` at some commit), read as data, and where it
comes from.

Targets are the manifests holding a DynamoGraphDeployment (id: the manifest's directory, e.g.
`vllm/agg-b200-dflash`); the model cache is the one PersistentVolumeClaim and every Job beside them. Vendored:
every regular file whose suffix is listed, byte for byte; symlinks and other files are named in the report.
Manifests are read by the program's strict reader (`serving_stack.facts.strict_files`), as the catalog reads them.

Published figures come from any Markdown table with a `Recipe` column and at least one figure column found by
header name (`Concurrency`, `TTFT p50 (ms)` or `(s)`, `Output tok/s/GPU`, `Tok/s/user`, `Synthetic AL`: the fixed
acceptance length of a `rejection_sample_method: synthetic` row, 0 without speculative decoding). A missing
column or an empty, `-` or `n/a` cell is an unknown figure; any other cell that is not a number is an error
naming the file, line and column; the same recipe in two tables must carry the same figures.

Provenance: from a git checkout the files must be exactly `COMMIT` (HEAD is it, nothing changed below the
directory) and the date and path come from git. A plain copy needs the date given, except when it is the
commit the catalog already records; so does the catalog's own vendored copy (it sits in this project's git).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Optional

from serving_stack.facts.catalog import Performance
from serving_stack.facts.catalog import Upstream as Upstream  # re-exported: the provenance `resolve` returns
from serving_stack.facts.strict_files import load_yaml_documents

UNPUBLISHED_CELLS = {"", "-", "—", "–", "n/a", "na", "tbd", "unknown", "?"}
FIGURE_COLUMNS = {
    "concurrency": ("concurrency", 1.0),
    "ttft p50 (ms)": ("ttftP50Ms", 1.0),
    "ttft p50 (s)": ("ttftP50Ms", 1000.0),
    "output tok/s/gpu": ("outputTokensPerSecondPerGpu", 1.0),
    "tok/s/user": ("tokensPerSecondPerUser", 1.0),
    "synthetic al": ("syntheticAcceptanceLength", 1.0),
}
FIGURES = tuple(Performance.model_fields)  # the order targets.yaml writes them in
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


def _cell_target_id(cell: str) -> str:
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
        rows.append(Row(_cell_target_id(cells[recipe_column]), figures, f"{label}:{number + 1}"))
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


class ProvenanceError(ValueError):
    """The commit, the date or the checkout state cannot be vouched for."""


def _git(directory: Path, *args: str) -> Optional[str]:
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=60, check=False
        )
    except FileNotFoundError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def resolve(
    directory: Path,
    commit: str,
    date: Optional[str],
    recorded: Upstream,
    *,
    plain_copy: bool = False,
) -> Upstream:
    """Where the files at `directory` come from, `recorded` (the catalog's `upstream:`) giving what git cannot.
    `plain_copy`: read `directory` as a plain copy even inside a git checkout (the catalog's own vendored
    copy lives in this project's repository, not upstream's)."""
    if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        raise ProvenanceError(f"COMMIT={commit!r} is not a git commit id (7 to 40 lower-case hex digits)")
    if date is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise ProvenanceError(f"DATE={date!r} is not YYYY-MM-DD")
    prefix = None if plain_copy else _git(directory, "rev-parse", "--show-prefix")
    if prefix is None:
        if date is None and commit != recorded.commit:
            raise ProvenanceError(
                f"{directory} is not a git checkout, so the date of {commit} is unknown: "
                "give DATE=YYYY-MM-DD (the commit date)"
            )
        return recorded.model_copy(update={"commit": commit, "date": date or recorded.date})
    full = _git(directory, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if full is None:
        raise ProvenanceError(f"commit {commit} is not in the git checkout of {directory}")
    head = _git(directory, "rev-parse", "HEAD")
    if head != full:
        raise ProvenanceError(f"{directory} is checked out at {head}, not {commit}: check out {commit} first")
    if _git(directory, "status", "--porcelain", "--", "."):
        raise ProvenanceError(f"{directory} has local changes: absorb a clean checkout of {commit}")
    committed = _git(directory, "show", "-s", "--format=%cs", full) or ""
    if date is not None and date != committed:
        raise ProvenanceError(f"DATE={date}, but git says {commit} was committed on {committed}")
    return recorded.model_copy(
        update={"path": prefix.rstrip("/") or recorded.path, "commit": commit, "date": committed}
    )


VENDORED_SUFFIXES = (".yaml", ".yml", ".md", ".sh")
MANIFEST_SUFFIXES = (".yaml", ".yml")


class UpstreamError(ValueError):
    """The directory is not a recipe revision this catalog can hold."""


@dataclass(frozen=True)
class UpstreamTarget:
    id: str
    manifest: str  # below the upstream directory
    config_map: dict[str, Any]
    dgd: dict[str, Any]


@dataclass(frozen=True)
class UpstreamRevision:
    root: Path
    files: tuple[str, ...]
    skipped: tuple[str, ...]
    targets: dict[str, UpstreamTarget]
    claim: str
    download_jobs: tuple[str, ...]
    figures: dict[str, Row]
    criteria: dict[str, float]


def target_id_of(manifest: str) -> str:
    """`vllm/agg-b200-dflash/deploy.yaml` -> `vllm/agg-b200-dflash`; another file name keeps its stem."""
    path = PurePosixPath(manifest)
    return str(path.parent) if path.stem == "deploy" else str(path.with_suffix(""))


def _target(label: str, documents: list[dict[str, Any]]) -> UpstreamTarget:
    kinds = sorted(str(d.get("kind")) for d in documents)
    if kinds != ["ConfigMap", "DynamoGraphDeployment"]:
        raise UpstreamError(
            f"{label}: holds {kinds}; a target manifest holds one ConfigMap and one DynamoGraphDeployment"
        )
    by_kind = {d["kind"]: d for d in documents}
    return UpstreamTarget(target_id_of(label), label, by_kind["ConfigMap"], by_kind["DynamoGraphDeployment"])


def read_upstream(root: Path) -> UpstreamRevision:
    if not root.is_dir():
        raise UpstreamError(f"{root} is not a directory")
    files: list[str] = []
    skipped: list[str] = []
    for path in sorted(p for p in root.rglob("*") if not p.is_dir()):
        relative = path.relative_to(root).as_posix()
        vendored = path.suffix in VENDORED_SUFFIXES and not path.is_symlink() and path.is_file()
        (files if vendored else skipped).append(relative)
    targets: dict[str, UpstreamTarget] = {}
    claims: list[str] = []
    jobs: list[str] = []
    for relative in (f for f in files if PurePosixPath(f).suffix in MANIFEST_SUFFIXES):
        documents = [d for d in load_yaml_documents(root / relative, relative) if d]  # the program's strict reader
        kinds = {str(d.get("kind")) for d in documents}
        if "DynamoGraphDeployment" in kinds:
            target = _target(relative, documents)
            if target.id in targets:
                raise UpstreamError(f"{relative}: target id {target.id} is also {targets[target.id].manifest}")
            targets[target.id] = target
        elif "PersistentVolumeClaim" in kinds:
            claims.append(relative)
        elif "Job" in kinds:
            jobs.append(relative)
    if len(claims) != 1:
        raise UpstreamError(
            f"the model cache needs exactly one PersistentVolumeClaim manifest, found {claims or 'none'}"
        )
    if not jobs:
        raise UpstreamError("no download Job manifest (a Job beside the claim)")
    if not targets:
        raise UpstreamError("no target manifest (a DynamoGraphDeployment)")
    figures = published_figures(root)
    return UpstreamRevision(
        root,
        tuple(files),
        tuple(skipped),
        dict(sorted(targets.items())),
        claims[0],
        tuple(jobs),
        figures,
        published_criteria(root),
    )
