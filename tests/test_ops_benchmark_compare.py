"""The comparison logic on plain data: ratios, direction, criteria from the catalog, unknown figures never pass."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from serving_stack.facts.catalog import CATALOG_DIR, load_catalog

pytestmark = pytest.mark.catalog_driven
from ops.benchmark_compare import Criteria, Measured, Published, compare, measured_from_export, published_from_catalog

PROGRAM = Path(__file__).resolve().parents[1] / "ops" / "benchmark_compare.py"
CATALOG = yaml.safe_load((CATALOG_DIR / "targets.yaml").read_text())


def measured_like(published: Published, gpus: int, **changes) -> Measured:
    """A run that reproduced the published row exactly, with `changes` applied."""
    fields = {
        "concurrency": published.concurrency,
        "ttft_p50_ms": published.ttft_p50_ms,
        "output_tokens_per_second": published.output_tokens_per_second_per_gpu * gpus,
        "tokens_per_second_per_user": published.tokens_per_second_per_user,
        "requests": 400,
        "error_requests": 3,
        "cancelled": False,
        "gpus": gpus,
    }
    return Measured(**{**fields, **changes})


def rows_of(comparison):
    return {row.metric: row for row in comparison.rows}


FULLY_PUBLISHED = sorted(
    r.id for r in load_catalog().recipes.values() if None not in r.entry.performance.model_dump().values()
)
MEETS_CRITERIA = next(
    t for t in FULLY_PUBLISHED if load_catalog().criteria.passed_by(load_catalog().recipe(t).entry.performance)
)


@pytest.mark.parametrize("target_id", FULLY_PUBLISHED)
def test_reproducing_the_published_row_gives_the_catalogs_own_verdict(target_id):
    catalog = load_catalog()
    published, criteria = published_from_catalog(CATALOG, target_id)
    comparison = compare(target_id, measured_like(published, gpus=2), published, criteria)
    assert all(row.vsPublished in ("pass", "-") for row in comparison.rows)
    assert all(row.ratio == pytest.approx(1.0) for row in comparison.rows if row.vsPublished == "pass")
    meets = catalog.criteria.passed_by(catalog.recipe(target_id).entry.performance)
    assert comparison.result == ("pass" if meets else "fail")


def test_ttft_is_better_when_lower_and_throughput_when_higher():
    published, criteria = published_from_catalog(CATALOG, FULLY_PUBLISHED[0])
    slow_ttft = published.ttft_p50_ms * 1.3
    low_throughput = published.tokens_per_second_per_user * 0.7
    rows = rows_of(
        compare(
            "t",
            measured_like(published, 1, ttft_p50_ms=slow_ttft, tokens_per_second_per_user=low_throughput),
            published,
            criteria,
            min_ratio=0.8,
        )
    )
    assert rows["TTFT p50 (ms)"].vsPublished == "fail" and rows["TTFT p50 (ms)"].ratio == pytest.approx(1.3)
    assert rows["output tok/s/user"].vsPublished == "fail" and rows["output tok/s/user"].ratio == pytest.approx(0.7)
    fast = rows_of(
        compare("t", measured_like(published, 1, ttft_p50_ms=published.ttft_p50_ms / 3), published, criteria)
    )
    assert fast["TTFT p50 (ms)"].vsPublished == "pass"


def test_criteria_are_checked_at_their_thresholds():
    criteria = Criteria(min_tokens_per_second_per_user=50, max_ttft_p50_ms=5000)
    published = Published(
        concurrency=8, ttft_p50_ms=4000, output_tokens_per_second_per_gpu=400, tokens_per_second_per_user=50
    )
    at_threshold = rows_of(compare("t", measured_like(published, 1, ttft_p50_ms=5000), published, criteria))
    assert at_threshold["TTFT p50 (ms)"].criterionCheck == "fail"  # TTFT p50 < 5 s: 5 s itself fails
    assert at_threshold["output tok/s/user"].criterionCheck == "pass"  # tok/s/user >= 50: 50 passes
    below = rows_of(compare("t", measured_like(published, 1, tokens_per_second_per_user=49.99), published, criteria))
    assert below["output tok/s/user"].criterionCheck == "fail"


def test_another_concurrency_is_not_comparable():
    published, criteria = published_from_catalog(CATALOG, FULLY_PUBLISHED[0])
    comparison = compare("t", measured_like(published, 1, concurrency=published.concurrency + 1), published, criteria)
    assert rows_of(comparison)["concurrency"].vsPublished == "fail" and comparison.result == "fail"


def test_unknown_published_figures_are_n_a_never_a_pass():
    catalog = {
        **CATALOG,
        "targets": [
            {
                "id": "vllm/new-target",
                "performance": {"concurrency": 16, "ttftP50Ms": "unknown", "outputTokensPerSecondPerGpu": None},
            }
        ],
    }
    published, criteria = published_from_catalog(catalog, "vllm/new-target")
    assert published == Published(16, None, None, None)
    measured = Measured(16, 200.0, 2000.0, 120.0, 400, 0, False, 1)
    comparison = compare("vllm/new-target", measured, published, criteria)
    rows = rows_of(comparison)
    assert rows["TTFT p50 (ms)"].vsPublished == "n/a" and rows["TTFT p50 (ms)"].ratio is None
    assert rows["TTFT p50 (ms)"].criterionCheck == "pass"  # the criterion needs only the measurement
    assert comparison.result == "n/a"
    no_row = published_from_catalog({**catalog, "targets": [{"id": "vllm/new-target"}]}, "vllm/new-target")[0]
    assert no_row == Published(None, None, None, None)


def test_a_run_without_valid_requests_or_cancelled_cannot_pass():
    published, criteria = published_from_catalog(CATALOG, FULLY_PUBLISHED[0])
    empty = measured_like(
        published, 1, ttft_p50_ms=None, tokens_per_second_per_user=None, output_tokens_per_second=None
    )
    assert compare("t", empty, published, criteria).result == "n/a"
    assert compare("t", measured_like(published, 1, cancelled=True), published, criteria).result == "fail"


def test_the_export_is_read_with_units_checked():
    export = {
        "time_to_first_token": {"unit": "s", "p50": 0.25},
        "request_count": {"unit": "requests", "avg": 40.0},
        "output_token_throughput": {"unit": "tokens/sec", "avg": 900.0},
        "input_config": {"loadgen": {"concurrency": 8}},
    }
    measured = measured_from_export(export, gpus=2)
    assert (measured.ttft_p50_ms, measured.concurrency, measured.requests, measured.error_requests) == (250.0, 8, 40, 0)
    assert measured.output_tokens_per_second_per_gpu == 450.0 and measured.tokens_per_second_per_user is None
    with pytest.raises(ValueError, match="time_to_first_token: unit 'min'"):
        measured_from_export({"time_to_first_token": {"unit": "min", "p50": 1}}, gpus=1)


@pytest.mark.parametrize("value", ["fast", -3, 0, True])
def test_a_published_figure_is_a_positive_number_or_unknown(value):
    catalog = {**CATALOG, "targets": [{"id": "x/y", "performance": {"ttftP50Ms": value}}]}
    with pytest.raises(ValueError, match=r"targets\[0\]\.performance\.ttftP50Ms"):
        published_from_catalog(catalog, "x/y")


def cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PROGRAM), *arguments], capture_output=True, text=True, timeout=60)


def test_cli_exit_codes_and_json(tmp_path):
    target = next(t for t in CATALOG["targets"] if t["id"] == MEETS_CRITERIA)
    performance = target["performance"]
    export = {
        "time_to_first_token": {"unit": "ms", "p50": performance["ttftP50Ms"]},
        "output_token_throughput": {"unit": "tokens/sec", "avg": performance["outputTokensPerSecondPerGpu"]},
        "output_token_throughput_per_user": {"unit": "tokens/sec/user", "avg": performance["tokensPerSecondPerUser"]},
        "request_count": {"unit": "requests", "avg": 400},
        "input_config": {
            "phases": [{"name": "profiling", "type": "concurrency", "concurrency": performance["concurrency"]}]
        },
    }
    (tmp_path / "export.json").write_text(json.dumps(export))
    catalog = ("--catalog", str(CATALOG_DIR / "targets.yaml"))
    passing = cli(
        *catalog,
        "--target",
        target["id"],
        "--export",
        str(tmp_path / "export.json"),
        "--gpus",
        "1",
        "--json",
        str(tmp_path / "c.json"),
    )
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert json.loads((tmp_path / "c.json").read_text())["result"] == "pass"
    export["output_token_throughput_per_user"]["avg"] = 10.0
    (tmp_path / "export.json").write_text(json.dumps(export))
    assert (
        cli(*catalog, "--target", target["id"], "--export", str(tmp_path / "export.json"), "--gpus", "1").returncode
        == 1
    )
    unknown = cli(*catalog, "--target", "vllm/nope", "--export", str(tmp_path / "export.json"), "--gpus", "1")
    assert unknown.returncode == 2 and "is not in the catalog" in unknown.stderr
    assert (
        cli(*catalog, "--target", target["id"], "--export", str(tmp_path / "export.json"), "--gpus", "0").returncode
        == 2
    )
