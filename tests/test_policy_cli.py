"""`make policy`: the pack's offline runner over a rendered resources.json prints the report the render wrote
for the same resources, exits 1 on a mandatory violation and 0 otherwise, and refuses an unreadable record
file with exit 2 and one bounded line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from policy_helpers import REPO

from policy.nemotron_policies.cli import MAX_ERROR
from policy.nemotron_policies.cli import main as run_policy
from tools.render import main as render


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build")
    for stack in ("dev", "prod"):
        render(["--stack", stack, "--out", str(out), "--secret-placeholders"])  # as `make render`
    return out


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_runner_reports_what_the_render_reported(renders, stack, capsys):
    expected = (renders / stack / "policy-report.txt").read_text()
    status = run_policy(["--stack", stack, str(renders / stack / "resources.json")])
    assert capsys.readouterr().out == expected
    assert status == (1 if "[mandatory]" in expected else 0)


def test_a_hand_edited_record_file_is_judged(renders, tmp_path, capsys):
    records = json.loads((renders / "dev" / "resources.json").read_text())
    job = next(r for r in records if r["type"] == "kubernetes:batch/v1:Job")
    job["inputs"]["spec"]["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest"
    edited = tmp_path / "resources.json"
    edited.write_text(json.dumps(records))
    assert run_policy(["--stack", "dev", str(edited)]) == 1
    report = capsys.readouterr().out
    assert "[mandatory]  nemotron-lightning-policies" in report
    assert f"image-pinning (kubernetes:batch/v1:Job::{job['name']})" in report


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (None, "no such file (render it first: make render STACK=dev)"),
        ('[{"type": "x", ', "not valid JSON: Expecting property name enclosed in double quotes at line 1"),
        ('{"type": "x"}', "expected a JSON list of resource records, got dict"),
        ('[{"name": "a", "inputs": {}}]', "record [0].type must be a non-empty string, got None"),
        ('[{"type": "t", "name": "n", "dependsOn": "x"}]', "record [0].dependsOn must be a list"),
        ("[" + json.dumps("y" * 100_000) + "]", "record [0] is not an object: 'yyyy"),
    ],
)
def test_unreadable_record_files_exit_2_with_one_bounded_line(tmp_path, capsys, content, error):
    path = tmp_path / "resources.json"
    if content is not None:
        path.write_text(content)
    assert run_policy(["--stack", "dev", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"error: {path}: ")
    assert error in line
    assert len(line) <= len("error: ") + MAX_ERROR + 3


def test_a_bad_pack_config_exits_2(renders, tmp_path, capsys):
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"image-pin": "advisory"}))
    assert run_policy(["--stack", "dev", "--policy-config", str(config), str(renders / "dev" / "resources.json")]) == 2
    assert "pack config names unknown policies ['image-pin']" in capsys.readouterr().err


@pytest.mark.slow  # `make policy` runs checkov on the manifests too
def test_make_policy_runs_the_runner_on_the_given_render(renders):
    result = subprocess.run(
        ["make", "-s", "policy", "STACK=dev", f"RESOURCES={renders / 'dev' / 'resources.json'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith((renders / "dev" / "policy-report.txt").read_text())
