"""`python -m tools.rollout resources.json`: prints the section, exits 1 on blocking findings, 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

from rollout_helpers import of_kind, records, remove_dependency

from serving_stack.names import PREWARM_APP
from tools.mock_runtime import PROJECT_DIR
from tools.rollout.__main__ import main


def _with_unordered_prewarm() -> list[dict]:
    """dev with its prewarm DaemonSet no longer ordered after the download Job (issue 10's first defect)."""
    dev = records("dev")
    (job,) = [j for j in of_kind(dev, "Job") if j["name"].endswith("download")]
    (daemon_set,) = [d for d in of_kind(dev, "DaemonSet") if PREWARM_APP in d["inputs"]["metadata"]["name"]]
    remove_dependency(dev, daemon_set, job)
    return dev


def test_blocking_findings_exit_1_and_are_printed_one_per_line(tmp_path, capsys):
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(_with_unordered_prewarm()))
    assert main([str(path), "--markdown", str(tmp_path / "rollout.md")]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("## Cold start") and "\n## Rollout" in out
    assert (tmp_path / "rollout.md").read_text() == out
    assert all(line.startswith(("error: ", "warning: ")) for line in err.splitlines())
    assert any(line.startswith("error: [wait]") for line in err.splitlines())


def test_the_committed_dev_stack_exits_0(tmp_path, capsys):
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(records("dev")))
    assert main([str(path)]) == 0
    assert not any(line.startswith("error:") for line in capsys.readouterr().err.splitlines())


def test_unreadable_input_exits_2(tmp_path):
    path = tmp_path / "resources.json"
    path.write_text("{not json")
    assert main([str(path)]) == 2
    assert main([str(tmp_path / "missing.json")]) == 2


def test_runs_as_a_module(tmp_path):
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(_with_unordered_prewarm()))
    result = subprocess.run(
        [sys.executable, "-m", "tools.rollout", str(path)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert "## Rollout" in result.stdout
    assert "error: [wait]" in result.stderr
