"""`make absorb` (`--progress`) names each step on stderr as it starts, with the seconds since the start; the
report stays on stdout, and without `--progress` stderr stays empty (a refusal is one line there)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from serving_stack.facts.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # two absorbs in subprocesses
def test_progress_names_each_step_on_stderr_and_leaves_the_report_on_stdout() -> None:
    commit = load_catalog().data.upstream.commit
    command = [sys.executable, "-m", "tools.absorb", "--upstream", "catalog/recipes", "--commit", commit, "--dry-run"]
    quiet = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    loud = subprocess.run([*command, "--progress"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == loud.returncode == 0, loud.stderr[-2000:]
    assert quiet.stderr == "" and quiet.stdout == loud.stdout
    steps = loud.stderr.splitlines()
    assert len(steps) >= 4 and all(re.fullmatch(r"absorb \[ *\d+\.\d s\] \S.*", step) for step in steps), steps
    seconds = [float(re.search(r"\[ *([\d.]+) s\]", step).group(1)) for step in steps]  # type: ignore[union-attr]
    assert seconds == sorted(seconds)
