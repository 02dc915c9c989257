"""`make absorb` on a synthetic next upstream revision (tests/synthetic_upstream.py): the command alone vendors
it into a copy of the catalog, reports every change, and the catalog-driven tests pass against the result
(`NEMOTRON_CATALOG_DIR` points them at the copy). On the vendored revision itself it reports no change."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import synthetic_upstream
import yaml

from serving_stack.facts.catalog import CATALOG_DIR, load_catalog
from serving_stack.facts.strict_files import CATALOG_DIR_ENV
from tools.absorb.upstream import FIGURES
from tools.mock_runtime import PROJECT_DIR

# `make absorb` whole, and the catalog-driven tests rerun against its result: `make test-all`.
pytestmark = pytest.mark.slow

TESTS_DIR = PROJECT_DIR / "tests"
MARKER = "pytestmark = pytest.mark.catalog_driven"


def child_env(catalog_dir) -> dict[str, str]:
    """This environment minus pytest's own variables (the child is a fresh run), with the catalog switched."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    return {**env, CATALOG_DIR_ENV: str(catalog_dir)}


def make_absorb(catalog_dir, upstream, commit, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "-C", str(PROJECT_DIR), "absorb", f"UPSTREAM={upstream}", f"COMMIT={commit}", *extra],
        env=child_env(catalog_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def absorbed(tmp_path_factory):
    root = tmp_path_factory.mktemp("absorb")
    catalog_dir = root / "catalog"
    shutil.copytree(CATALOG_DIR, catalog_dir)
    revision = synthetic_upstream.build(root / "upstream", load_catalog())
    result = make_absorb(catalog_dir, revision.directory, revision.commit)
    return catalog_dir, revision, result


def test_the_vendored_revision_absorbs_as_no_change(tmp_path):
    catalog_dir = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, catalog_dir)
    before = {p: p.read_bytes() for p in catalog_dir.rglob("*") if p.is_file()}
    result = make_absorb(catalog_dir, catalog_dir / "recipes", load_catalog().data.upstream.commit)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 added, 0 removed, 0 renamed, 0 changed" in result.stdout
    assert result.stdout.rstrip().endswith("No change: the catalog already holds this revision.")
    assert {p: p.read_bytes() for p in catalog_dir.rglob("*") if p.is_file()} == before


def test_the_report_names_every_change(absorbed):
    catalog_dir, revision, result = absorbed
    assert result.returncode == 0, result.stdout + result.stderr
    report = result.stdout
    old, new = revision.renamed
    assert f"  added    {revision.new_gpu_target}  [no published figures]" in report
    assert f"  added    {revision.bf16_target}\n" in report
    assert f"  removed  {revision.removed}\n" in report
    assert f"  renamed  {old} -> {new}  (similarity " in report
    assert re.search(
        rf"^ +(changed  )?{re.escape(new)}: DynamoGraphDeployment spec\.components\[\w+\]\..*\.args: '\d+' -> '48'$",
        report,
        re.M,
    )
    assert f"  changed  {revision.changed}: performance.ttftP50Ms: " in report
    assert re.search(
        rf"^  \d+\. GPU {synthetic_upstream.NEW_GPU_LABEL} is not in catalog/gpus\.yaml \(targets "
        rf"{re.escape(revision.new_gpu_target)}\)",
        report,
        re.M,
    ), "the data gap is a numbered step"
    assert f"  claim size: {load_catalog().model_cache.size} -> {revision.claim_size}" in report
    bf16_job_is_new = synthetic_upstream.BF16_JOB not in {job.name for job in load_catalog().model_cache.jobs}
    assert (
        f"  download Job added: {synthetic_upstream.BF16_JOB} (recipes/model-cache/{synthetic_upstream.BF16_JOB}.yaml): "
        f"{synthetic_upstream.BF16_ENV}={synthetic_upstream.BF16_REPO}" in report
    ) == bf16_job_is_new
    assert "Stacks selecting a removed or renamed target: none" in report
    targets = yaml.safe_load((catalog_dir / "targets.yaml").read_text())["targets"]
    assert "DOES NOT CONFORM" not in report
    assert report.count(" conforms\n") == len(targets) + 1
    assert report.rstrip().endswith("Written: catalog/recipes/ and catalog/targets.yaml.")


def test_the_absorbed_catalog_holds_the_revision(absorbed):
    catalog_dir, revision, _ = absorbed
    data = yaml.safe_load((catalog_dir / "targets.yaml").read_text())
    assert data["upstream"] == {
        "repository": "ai-dynamo/dynamo",
        "path": synthetic_upstream.UPSTREAM_PATH,
        "commit": revision.commit,
        "date": synthetic_upstream.COMMIT_DATE,
    }
    entries = {t["id"]: t for t in data["targets"]}
    assert entries[revision.new_gpu_target]["performance"] == dict.fromkeys(FIGURES, "unknown")
    assert entries[revision.bf16_target]["performance"] == synthetic_upstream.BF16_ROW
    assert revision.removed not in entries
    assert revision.renamed[0] not in entries
    assert data["modelCache"]["downloadJobs"][-1] == f"recipes/model-cache/{synthetic_upstream.BF16_JOB}.yaml"
    vendored = sorted(
        p.relative_to(catalog_dir / "recipes") for p in (catalog_dir / "recipes").rglob("*") if p.is_file()
    )
    upstream = sorted(p.relative_to(revision.directory) for p in revision.directory.rglob("*") if p.is_file())
    assert vendored == upstream
    assert all((catalog_dir / "recipes" / f).read_bytes() == (revision.directory / f).read_bytes() for f in upstream)


def test_absorbing_it_again_reports_no_change(absorbed):
    catalog_dir, revision, _ = absorbed
    again = make_absorb(catalog_dir, revision.directory, revision.commit)
    assert again.returncode == 0
    assert again.stdout.rstrip().endswith("No change: the catalog already holds this revision.")


def run_catalog_driven(catalog_dir) -> str:
    """Every catalog-driven test module again, in a fresh pytest against `catalog_dir`; the summary's tail
    (the run must pass)."""
    modules = sorted(str(p.relative_to(PROJECT_DIR)) for p in TESTS_DIR.glob("test_*.py") if MARKER in p.read_text())
    assert len(modules) >= 10, modules
    command = [sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", "-p", "no:warnings", "-n", "2"]
    command += ["--dist", "loadfile"]
    result = subprocess.run(
        [*command, "-m", "catalog_driven", *modules],
        cwd=PROJECT_DIR,
        env=child_env(catalog_dir),
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = "\n".join(result.stdout.splitlines()[-40:])
    assert result.returncode == 0, tail + result.stderr[-2000:]
    assert " passed" in tail and " failed" not in tail and " error" not in tail
    return tail


def test_the_catalog_driven_tests_pass_against_the_absorbed_revision(absorbed):
    catalog_dir, _, _ = absorbed
    # nothing skips at another revision: the seed-era reference is absorbed into a copy of this catalog too
    assert " skipped" not in run_catalog_driven(catalog_dir)


def _stacks() -> list[str]:
    return sorted(p.name.split(".")[1] for p in PROJECT_DIR.glob("Pulumi.*.yaml"))


def test_make_plan_and_every_render_pass_on_the_absorbed_tree(absorbed, tmp_path):
    """The target on an unknown GPU is listed by the planner as not placeable, not a reason to refuse the stack."""
    catalog_dir, revision, _ = absorbed
    run = {"cwd": PROJECT_DIR, "env": child_env(catalog_dir), "capture_output": True, "text": True, "timeout": 600}
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["name"]
    configs = {s: yaml.safe_load((PROJECT_DIR / f"Pulumi.{s}.yaml").read_text())["config"] for s in _stacks()}
    planned = [stack for stack, config in configs.items() if f"{project}:demand" in config]
    assert planned
    for stack in planned:
        result = subprocess.run([sys.executable, "-m", "tools.plan_capacity", "--stack", stack], **run)
        assert result.returncode == 0, (stack, result.stdout[-2000:], result.stderr[-2000:])
        assert f"**Not placeable** (no GPU facts yet): {revision.new_gpu_target}: " in result.stdout
    for stack in configs:
        command = ["-m", "tools.render", "--stack", stack, "--secret-placeholders", "--out", str(tmp_path)]
        result = subprocess.run([sys.executable, *command], **run)
        assert result.returncode == 0, (stack, result.stdout[-2000:], result.stderr[-2000:])


def absorb_cli(catalog_dir, upstream, *arguments: str) -> subprocess.CompletedProcess[str]:
    """The tool itself (make turns every failing status into 2): 0 absorbed, 1 some target does not conform,
    2 not absorbed."""
    return subprocess.run(
        [sys.executable, "-m", "tools.absorb", "--upstream", str(upstream), *arguments],
        cwd=PROJECT_DIR,
        env=child_env(catalog_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def plain_copy(tmp_path):
    """A catalog copy, and an upstream directory that is a plain copy of its recipes (not a git checkout)."""
    catalog_dir, upstream = tmp_path / "catalog", tmp_path / "upstream"
    shutil.copytree(CATALOG_DIR, catalog_dir)
    shutil.copytree(CATALOG_DIR / "recipes", upstream)
    return catalog_dir, upstream


def test_a_revision_that_does_not_load_writes_nothing(plain_copy):
    catalog_dir, upstream = plain_copy
    table = next(p for p in upstream.rglob("*.md") if "| Recipe |" in p.read_text())
    lines = table.read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| `"))
    cells = lines[row].split("|")
    cells[-2] = " fast "
    lines[row] = "|".join(cells)
    table.write_text("\n".join(lines) + "\n")
    before = {p: p.read_bytes() for p in catalog_dir.rglob("*") if p.is_file()}
    result = absorb_cli(catalog_dir, upstream, "--commit", "abcdef1", "--date", "2026-10-01")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: not absorbed: {table.relative_to(upstream).as_posix()}:{row + 1}, column ")
    assert {p: p.read_bytes() for p in catalog_dir.rglob("*") if p.is_file()} == before


def test_a_target_loading_a_checkpoint_no_job_fetches_is_absorbed_but_does_not_conform(plain_copy):
    catalog_dir, upstream = plain_copy
    source = next(iter(load_catalog().recipes.values()))
    manifest = upstream / source.entry.manifest.removeprefix("recipes/")
    manifest.write_text(manifest.read_text().replace(source.checkpoints[0], "nvidia/Nemotron-Unfetched"))
    result = absorb_cli(catalog_dir, upstream, "--commit", "abcdef1", "--date", "2026-10-01")
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        f"  {source.id:<40} DOES NOT CONFORM\n      {source.id}: does not plan: modelCache.checkpoints: target "
        in result.stdout
    )
    assert "'nvidia/Nemotron-Unfetched', which the model cache does not download" in result.stdout
    assert yaml.safe_load((catalog_dir / "targets.yaml").read_text())["upstream"]["commit"] == "abcdef1"
