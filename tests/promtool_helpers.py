"""Run the real promtool (Debian package `prometheus`, installed by `make test`) on generated rule files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

PROMTOOL_TIMEOUT_SECONDS = 120


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is not installed: run `make promtool` (Debian package `prometheus`) or `make test`")
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=PROMTOOL_TIMEOUT_SECONDS)


def write_rules(directory: Path, groups: list[dict[str, Any]], name: str = "rules.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False, width=4096))
    return path


def check_rules(directory: Path, groups: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    return promtool("check", "rules", str(write_rules(directory, groups)), cwd=directory)


def run_rule_tests(
    directory: Path, groups: list[dict[str, Any]], tests: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` with these unit tests (each: interval, input_series, alert_rule_test)."""
    rules = write_rules(directory, groups)
    test_file = directory / "rules_test.yaml"
    test_file.write_text(
        yaml.safe_dump(
            {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": tests}, sort_keys=False, width=4096
        )
    )
    return promtool("test", "rules", test_file.name, cwd=directory)
