#!/usr/bin/env python3
"""Compare an AIPerf run with the catalog's published row for a target and with the published criteria.

Per metric: measured, published, measured / published, whether it is within `--min-ratio` of the
published figure (in the metric's better direction), and whether it meets the catalog criterion
(tok/s/user >= 50, TTFT p50 < 5 s). A figure the catalog does not publish ("unknown", null or
absent) makes its checks n/a, and n/a is never a pass: the overall result is `pass` only when every
check is known and passed, `fail` when any known check failed, else `n/a`.

The comparison takes plain data (`Measured`, `Published`, `Criteria`); only `main` reads files:
AIPerf's `profile_export_aiperf.json` and `catalog/targets.yaml`. Exit 0 pass, 1 fail, 2 bad
input, 3 n/a. One stdlib-only file (hence its length): the benchmark CronJob runs it from the
programs ConfigMap beside the AIPerf image.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

EXIT_CODES = {"pass": 0, "fail": 1, "n/a": 3}
UNKNOWN = ("unknown", None)


@dataclass(frozen=True)
class Measured:
    concurrency: Optional[int]
    ttft_p50_ms: Optional[float]
    output_tokens_per_second: Optional[float]
    tokens_per_second_per_user: Optional[float]
    requests: Optional[int]
    error_requests: int
    cancelled: bool
    gpus: int

    @property
    def output_tokens_per_second_per_gpu(self) -> Optional[float]:
        return None if self.output_tokens_per_second is None else self.output_tokens_per_second / self.gpus


@dataclass(frozen=True)
class Published:
    concurrency: Optional[int]
    ttft_p50_ms: Optional[float]
    output_tokens_per_second_per_gpu: Optional[float]
    tokens_per_second_per_user: Optional[float]


@dataclass(frozen=True)
class Criteria:
    min_tokens_per_second_per_user: Optional[float]
    max_ttft_p50_ms: Optional[float]


@dataclass(frozen=True)
class Row:
    metric: str
    measured: Optional[float]
    published: Optional[float]
    ratio: Optional[float]
    vsPublished: str  # pass | fail | n/a | - (no published comparison for this row)
    criterion: str  # e.g. ">= 50", or "-"
    criterionCheck: str  # pass | fail | n/a | -


@dataclass(frozen=True)
class Comparison:
    target: str
    gpus: int
    min_ratio: float
    rows: list[Row]

    @property
    def result(self) -> str:
        checks = [c for row in self.rows for c in (row.vsPublished, row.criterionCheck) if c != "-"]
        return "fail" if "fail" in checks else "n/a" if "n/a" in checks else "pass"


def _verdict(passed: Optional[bool]) -> str:
    return "n/a" if passed is None else "pass" if passed else "fail"


def _row(
    metric: str,
    measured: Optional[float],
    published: Optional[float],
    min_ratio: float,
    *,
    higher_is_better: bool,
    criterion: Optional[tuple[str, Optional[float]]] = None,
) -> Row:
    ratio = measured / published if measured is not None and published else None
    vs_published = None if ratio is None else ratio >= min_ratio if higher_is_better else ratio <= 1 / min_ratio
    criterion_text, criterion_check = "-", "-"
    if criterion is not None:
        operator, bound = criterion
        criterion_text = f"{operator} {bound:g}" if bound is not None else f"{operator} unknown"
        met = None if bound is None or measured is None else measured >= bound if operator == ">=" else measured < bound
        criterion_check = _verdict(met)
    return Row(metric, measured, published, ratio, _verdict(vs_published), criterion_text, criterion_check)


def compare(
    target: str, measured: Measured, published: Published, criteria: Criteria, min_ratio: float = 0.8
) -> Comparison:
    """Every row of the comparison; `min_ratio` is how far below published (TTFT: above, 1/min_ratio) still passes."""
    same_concurrency = (
        None if None in (measured.concurrency, published.concurrency) else measured.concurrency == published.concurrency
    )
    concurrency_ratio = (
        measured.concurrency / published.concurrency if measured.concurrency and published.concurrency else None
    )
    rows = [
        Row(
            "concurrency",
            measured.concurrency,
            published.concurrency,
            concurrency_ratio,
            _verdict(same_concurrency),
            "-",
            "-",
        ),
        _row(
            "TTFT p50 (ms)",
            measured.ttft_p50_ms,
            published.ttft_p50_ms,
            min_ratio,
            higher_is_better=False,
            criterion=("<", criteria.max_ttft_p50_ms),
        ),
        _row(
            "output tok/s/user",
            measured.tokens_per_second_per_user,
            published.tokens_per_second_per_user,
            min_ratio,
            higher_is_better=True,
            criterion=(">=", criteria.min_tokens_per_second_per_user),
        ),
        _row(
            "output tok/s/GPU",
            measured.output_tokens_per_second_per_gpu,
            published.output_tokens_per_second_per_gpu,
            min_ratio,
            higher_is_better=True,
        ),
        Row("requests", measured.requests, None, None, "-", "-", "-"),
        Row("error requests", measured.error_requests, None, None, "-", "-", "-"),
        Row("run completed", None, None, None, "-", "not cancelled", _verdict(not measured.cancelled)),
    ]
    return Comparison(target, measured.gpus, min_ratio, rows)


def _metric(export: dict[str, Any], name: str, statistic: str, units: dict[str, float]) -> Optional[float]:
    entry = export.get(name)
    if not isinstance(entry, dict) or entry.get(statistic) is None:
        return None
    if entry.get("unit") not in units:
        raise ValueError(f"{name}: unit {entry.get('unit')!r}, expected one of {sorted(units)}")
    return float(entry[statistic]) * units[entry["unit"]]


def _concurrency(config: dict[str, Any]) -> Optional[int]:
    """The profiling phase's concurrency (export schema 1.x), or the older `loadgen.concurrency`."""
    for phase in config.get("phases") or []:
        if phase.get("name") == "profiling" and phase.get("type") == "concurrency":
            return int(phase["concurrency"])
    legacy = (config.get("loadgen") or {}).get("concurrency")
    return None if legacy is None else int(legacy)


def measured_from_export(export: dict[str, Any], gpus: int) -> Measured:
    """The figures the catalog publishes, read from AIPerf's `profile_export_aiperf.json`."""
    requests = _metric(export, "request_count", "avg", {"requests": 1})
    return Measured(
        concurrency=_concurrency(export.get("input_config") or {}),
        ttft_p50_ms=_metric(export, "time_to_first_token", "p50", {"ms": 1, "s": 1000}),
        output_tokens_per_second=_metric(export, "output_token_throughput", "avg", {"tokens/sec": 1}),
        tokens_per_second_per_user=_metric(export, "output_token_throughput_per_user", "avg", {"tokens/sec/user": 1}),
        requests=None if requests is None else int(requests),
        error_requests=int(_metric(export, "error_request_count", "avg", {"requests": 1}) or 0),
        cancelled=bool(export.get("was_cancelled")),
        gpus=gpus,
    )


def _known(row: dict[str, Any], key: str, where: str) -> Optional[float]:
    value = row.get(key)
    if value in UNKNOWN:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}.{key}: {value!r} is neither a positive number nor 'unknown'")
    return float(value)


def published_from_catalog(catalog: dict[str, Any], target: str) -> tuple[Published, Criteria]:
    """The target's `performance` row and the catalog `criteria`, unknown figures as None."""
    rows = {entry.get("id"): entry for entry in catalog.get("targets") or []}
    if target not in rows:
        raise ValueError(f"target {target!r} is not in the catalog; known: {', '.join(sorted(rows))}")
    index = list(rows).index(target)
    performance = rows[target].get("performance") or {}
    where = f"targets[{index}].performance"
    concurrency = _known(performance, "concurrency", where)
    published = Published(
        concurrency=None if concurrency is None else int(concurrency),
        ttft_p50_ms=_known(performance, "ttftP50Ms", where),
        output_tokens_per_second_per_gpu=_known(performance, "outputTokensPerSecondPerGpu", where),
        tokens_per_second_per_user=_known(performance, "tokensPerSecondPerUser", where),
    )
    criteria = catalog.get("criteria") or {}
    return published, Criteria(
        _known(criteria, "minTokensPerSecondPerUser", "criteria"), _known(criteria, "maxTtftP50Ms", "criteria")
    )


def _cell(value: Optional[float]) -> str:
    if value is None:
        return "n/a"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"


def markdown(comparison: Comparison) -> str:
    tolerance = f"ratio >= {comparison.min_ratio:g} (TTFT <= {1 / comparison.min_ratio:.3g})"
    lines = [
        f"Benchmark of `{comparison.target}` on {comparison.gpus} GPU(s); vs published passes at {tolerance}.",
        "",
        "| metric | measured | published | measured / published | vs published | criterion | criterion met |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for row in comparison.rows:
        compared = row.vsPublished != "-"
        measured = "-" if row.measured is None and row.criterionCheck != "-" else _cell(row.measured)
        published = _cell(row.published) if compared else "-"
        ratio = ("n/a" if row.ratio is None else f"{row.ratio:.2f}") if compared else "-"
        lines.append(
            f"| {row.metric} | {measured} | {published} | {ratio} | {row.vsPublished} | {row.criterion} "
            f"| {row.criterionCheck} |"
        )
    lines += ["", f"Result: **{comparison.result}**"]
    return "\n".join(lines)


def as_json(comparison: Comparison) -> dict[str, Any]:
    return {
        "target": comparison.target,
        "gpus": comparison.gpus,
        "minRatio": comparison.min_ratio,
        "result": comparison.result,
        "rows": [asdict(row) for row in comparison.rows],
    }


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="catalog target id, e.g. vllm/agg-h200-dspark")
    parser.add_argument("--export", required=True, type=Path, help="AIPerf's profile_export_aiperf.json")
    parser.add_argument("--gpus", required=True, type=int, help="GPUs the target used (the endpoint's `gpus` output)")
    parser.add_argument(
        "--catalog", type=Path, default=Path(__file__).resolve().parent.parent / "catalog" / "targets.yaml"
    )
    parser.add_argument(
        "--min-ratio", type=float, default=0.8, help="lowest measured/published that passes (default 0.8)"
    )
    parser.add_argument("--json", type=Path, help="also write the comparison as JSON to this path")
    args = parser.parse_args(argv)
    if args.gpus < 1 or not 0 < args.min_ratio <= 1:
        parser.error("--gpus must be >= 1 and --min-ratio in (0, 1]")
    import yaml  # only the CLI reads the catalog; the comparison itself is stdlib

    try:
        published, criteria = published_from_catalog(yaml.safe_load(args.catalog.read_text()), args.target)
        measured = measured_from_export(json.loads(args.export.read_text()), args.gpus)
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    comparison = compare(args.target, measured, published, criteria, args.min_ratio)
    print(markdown(comparison))
    if args.json:
        args.json.write_text(json.dumps(as_json(comparison), indent=2) + "\n")
    return EXIT_CODES[comparison.result]


if __name__ == "__main__":
    sys.exit(main())
