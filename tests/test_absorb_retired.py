"""Absorbing a revision that renames targets a committed stack selects never breaks it: the targets are
retired (kept selectable from their last revision's manifest), the stack renders exactly as before apart
from a warning naming the successor, switching it to the successors needs no other edit (the defaults
follow the checkpoint data), and the catalog-driven suites pass against the absorbed catalog.
`make absorb` reads stack files strictly: an unreadable one is one line, `targets: auto` a note."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import synthetic_upstream
import yaml
from test_absorb_revision import child_env, run_catalog_driven

from serving_stack.facts.catalog import CATALOG_DIR, load_catalog
from tools.mock_runtime import PROJECT_DIR

STACK = "prod"
STACK_FILE = f"Pulumi.{STACK}.yaml"


def absorb(catalog_dir, upstream, commit, *extra: str, project_dir=PROJECT_DIR) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.absorb",
            "--upstream",
            str(upstream),
            "--commit",
            commit,
            "--project-dir",
            str(project_dir),
            *extra,
        ],
        cwd=PROJECT_DIR,
        env=child_env(catalog_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )


def render(catalog_dir, out, project_dir=PROJECT_DIR) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.render",
            "--stack",
            STACK,
            "--secret-placeholders",
            "--out",
            str(out),
            "--project-dir",
            str(project_dir),
        ],
        cwd=PROJECT_DIR,
        env=child_env(catalog_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )


def scratch_project(root, stack_text: str):
    """The project as is (linked), with one stack file replaced."""
    project = root / "project"
    project.mkdir()
    for entry in PROJECT_DIR.iterdir():
        if entry.name not in (STACK_FILE, "build", ".git"):
            (project / entry.name).symlink_to(entry)
    (project / STACK_FILE).write_text(stack_text)
    return project


@pytest.fixture(scope="module")
def held(tmp_path_factory):
    """The committed stack's aggregated targets renamed to BF16 variants, absorbed into a catalog copy whose
    checkpoint sizes also changed (the BF16 set 10% larger than listed)."""
    root = tmp_path_factory.mktemp("held")
    catalog_dir = root / "catalog"
    shutil.copytree(CATALOG_DIR, catalog_dir)
    sizes = catalog_dir / "checkpoints.yaml"
    data = yaml.safe_load(sizes.read_text())
    bf16 = data["repositories"][synthetic_upstream.BF16_REPO]
    bf16["sizeGB"] = round(bf16["sizeGB"] * 1.1, 1)
    sizes.write_text(yaml.safe_dump(data, sort_keys=False))
    shutil.copytree(catalog_dir, root / "catalog-before")  # the sizes changed, the revision not yet absorbed
    revision = synthetic_upstream.build_replacing(root / "upstream", load_catalog(), STACK_FILE)
    result = absorb(catalog_dir, revision.directory, revision.commit)
    return root, catalog_dir, revision, result


def test_the_report_retires_the_renamed_targets_and_names_the_stack(held):
    _, catalog_dir, revision, result = held
    assert result.returncode == 0, result.stdout + result.stderr
    catalog = yaml.safe_load((catalog_dir / "targets.yaml").read_text())
    retired = {entry["id"]: entry for entry in catalog["retired"]}
    assert set(retired) >= set(revision.renamed)  # beside any retired by an earlier revision
    for old, new in revision.renamed.items():
        assert retired[old]["retired"]["successor"] == new
        assert (catalog_dir / retired[old]["manifest"]).is_file()
        assert f"{STACK_FILE} targets[" in result.stdout and f"{old} is retired: upstream renamed it to {new}" in (
            result.stdout
        )
    assert "DOES NOT CONFORM" not in result.stdout


@pytest.mark.slow  # the program rendered twice in subprocesses, before and after the absorb
def test_the_stack_renders_as_before_apart_from_the_warning(held, tmp_path):
    root, catalog_dir, revision, _ = held
    before = render(root / "catalog-before", tmp_path / "before")
    after = render(catalog_dir, tmp_path / "after")
    assert before.returncode == 0 and after.returncode == 0, before.stderr[-2000:] + after.stderr[-2000:]
    for name in ("resources.json", "outputs.json"):
        assert (tmp_path / "before" / STACK / name).read_text() == (tmp_path / "after" / STACK / name).read_text()
    known = set((tmp_path / "before" / STACK / "warnings.txt").read_text().splitlines())  # not the absorb's
    warnings = [w for w in (tmp_path / "after" / STACK / "warnings.txt").read_text().splitlines() if w not in known]
    assert len(warnings) == len(revision.renamed)
    summary = (tmp_path / "after" / STACK / "summary.md").read_text()
    for old, new in revision.renamed.items():
        (line,) = [w for w in warnings if f" {old} is retired" in w]
        assert line.endswith(f"select its successor {new}")
        assert line in after.stderr and f"- {line}" in summary


@pytest.mark.slow  # a render in a subprocess
def test_switching_the_stack_to_the_successors_needs_no_other_edit(held, tmp_path):
    _root, catalog_dir, revision, _ = held
    text = (PROJECT_DIR / STACK_FILE).read_text()
    for old, new in revision.renamed.items():
        text = text.replace(f"- id: {old}\n", f"- id: {new}\n")
    result = render(catalog_dir, tmp_path / "out", scratch_project(tmp_path, text))
    assert result.returncode == 0, result.stderr[-3000:]
    outputs = json.loads((tmp_path / "out" / STACK / "outputs.json").read_text())
    deployed = {e["id"] for e in outputs["endpoints"] if e["kind"] == "dynamo"}
    assert set(revision.renamed.values()) <= deployed
    assert " is retired" not in (tmp_path / "out" / STACK / "warnings.txt").read_text()


def test_a_retired_target_a_stack_selects_cannot_be_dropped(held):
    _, catalog_dir, revision, _ = held
    old = next(iter(revision.renamed))
    before = (catalog_dir / "targets.yaml").read_bytes()
    result = absorb(catalog_dir, revision.directory, revision.commit, "--drop-retired", old)
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"error: not absorbed: --drop-retired: {old!r} is selected by {STACK_FILE} targets["
    )
    assert (catalog_dir / "targets.yaml").read_bytes() == before


def test_a_retired_target_no_stack_selects_can_be_dropped(held, tmp_path):
    _, catalog_dir, revision, _ = held
    copy = tmp_path / "catalog"
    shutil.copytree(catalog_dir, copy)
    old = next(iter(revision.renamed))
    text = (PROJECT_DIR / STACK_FILE).read_text().replace(f"- id: {old}\n", f"- id: {revision.renamed[old]}\n")
    result = absorb(
        copy, revision.directory, revision.commit, "--drop-retired", old, project_dir=scratch_project(tmp_path, text)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    retired = [e["id"] for e in yaml.safe_load((copy / "targets.yaml").read_text())["retired"]]
    assert old not in retired and retired
    assert not any(p.match(f"*/{old}/deploy.yaml") for p in (copy / "retired").rglob("deploy.yaml"))


@pytest.mark.parametrize(
    ("stack_text", "expected"),
    [
        ("config:\n  nemotron-lightning:targets: auto\n", "note"),
        ("config:\n  nemotron-lightning:targets: []\n", "clean"),
        ("config:\n  nemotron-lightning:kubernetes: {namespace: x}\n", "clean"),
        ("config:\n  nemotron-lightning:targets: [{id: a}\n", "error"),
        ("config:\n  a: 1\n  a: 2\n", "error"),
        ("config:\n  nemotron-lightning:targets: [vllm/agg-h100-mtp]\n", "error"),
    ],
)
def test_every_form_of_a_stack_file_exits_cleanly(tmp_path, stack_text, expected):
    project = scratch_project(tmp_path, (PROJECT_DIR / STACK_FILE).read_text())
    (project / "Pulumi.extra.yaml").write_text(stack_text)
    commit = load_catalog().data.upstream.commit
    result = absorb(CATALOG_DIR, CATALOG_DIR / "recipes", commit, "--dry-run", project_dir=project)
    assert "Traceback" not in result.stderr
    if expected == "error":
        assert result.returncode == 2 and result.stdout == ""
        (line,) = result.stderr.splitlines()
        assert line.startswith("error: not absorbed: Pulumi.extra.yaml")
    else:
        assert result.returncode == 0, result.stderr
        assert ("Pulumi.extra.yaml: targets is 'auto', not a list of targets" in result.stdout) == (expected == "note")


@pytest.mark.slow  # every catalog-driven test module again, in a subprocess
def test_the_catalog_driven_tests_pass_with_the_stack_on_retired_targets(held):
    _, catalog_dir, _, _ = held
    run_catalog_driven(catalog_dir)
