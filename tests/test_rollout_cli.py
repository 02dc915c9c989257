"""`python -m tools.rollout resources.json`: prints the section, exits 1 on blocking findings, 2 on bad input."""
from __future__ import annotations

import json
import subprocess
import sys

from rollout_helpers import records

from tools.mock_runtime import PROJECT_DIR
from tools.rollout.__main__ import main


def test_blocking_findings_exit_1_and_are_printed_one_per_line(tmp_path, capsys):
    dev = records("dev")
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(dev))
    assert main([str(path), "--markdown", str(tmp_path / "rollout.md")]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("## Rollout") and (tmp_path / "rollout.md").read_text() == out
    assert all(line.startswith(("error: ", "warning: ")) for line in err.splitlines())


def test_a_stack_without_blocking_findings_exits_0(tmp_path):
    quiet = [r for r in records("dev") if r["custom"] and r["inputs"].get("kind") in ("Namespace", "ConfigMap")]
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(quiet))
    assert main([str(path)]) == 0


def test_unreadable_input_exits_2(tmp_path):
    path = tmp_path / "resources.json"
    path.write_text("{not json")
    assert main([str(path)]) == 2
    assert main([str(tmp_path / "missing.json")]) == 2


def test_runs_as_a_module(tmp_path):
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(records("dev")))
    result = subprocess.run([sys.executable, "-m", "tools.rollout", str(path)], cwd=PROJECT_DIR, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 1 and "## Rollout" in result.stdout and "error: [wait]" in result.stderr
