"""`make diff`: a planted commit of each kind of change, rendered twice offline, named correctly.

One temporary clone, one planted commit, one render of each side of prod (reused by every test, read
forwards and backwards); `make diff` end to end on dev, which the planted commit leaves unchanged; `make
diff` against a base whose requirement files differ (rendered in a virtualenv of its own, cached); and the
sample comment of docs/pull-requests.md, regenerated and compared.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pr_diff_helpers import GIT_USER, REPO, Planted, copy_project, plant_changes

from tools.pr_diff import sample
from tools.pr_diff.markdown import render_markdown, topic
from tools.pr_diff.render_ref import CACHE_ENV, RenderedTree, render_base_and_head
from tools.pr_diff.stack_diff import ResourceChange, StackDiff, diff_stack
from tools.rollout.rules import load_rules

# `make diff` end to end on a planted git repository: `make test-all` (tests/test_pr_diff_fields.py is the fast part).
pytestmark = pytest.mark.slow

VENV = Path(sys.prefix)
DGD = "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


@pytest.fixture(scope="module")
def planted_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Planted]:
    repo = copy_project(tmp_path_factory.mktemp("clone"))
    return repo, plant_changes(repo)


@pytest.fixture(scope="module")
def prod_renders(planted_repo: tuple[Path, Planted]) -> tuple[RenderedTree, RenderedTree]:
    return render_base_and_head(planted_repo[0], "HEAD~1", "prod", VENV)


@pytest.fixture(scope="module")
def forward(prod_renders: tuple[RenderedTree, RenderedTree]) -> StackDiff:
    base, head = prod_renders
    return diff_stack("prod", base.render, head.render, load_rules())


def _one(diff: StackDiff, type_token: str, name_part: str) -> ResourceChange:
    matches = [r for r in diff.resources if r.type == type_token and name_part in r.name]
    assert len(matches) == 1, f"{type_token} *{name_part}*: {[(r.kind, r.name) for r in matches]}"
    return matches[0]


def _slug(target_id: str) -> str:
    return target_id.replace("/", "-")


def test_added_target_is_an_added_dgd(forward: StackDiff, planted_repo: tuple[Path, Planted]) -> None:
    added = _one(forward, DGD, _slug(planted_repo[1].added_target))
    assert added.kind == "add"
    assert "x1" in added.summary


def test_replicas_change_names_the_component(forward: StackDiff, planted_repo: tuple[Path, Planted]) -> None:
    target, component, before, after = planted_repo[1].replicas
    change = _one(forward, DGD, _slug(target))
    assert change.kind == "change"
    field = next(f for f in change.fields if f.path == f"spec.components[{component}].replicas")
    assert (field.before, field.after, topic(field)) == (before, after, "replicas")


def test_pool_instance_type_change_replaces_the_node_group(
    forward: StackDiff, planted_repo: tuple[Path, Planted]
) -> None:
    pool, before, after = planted_repo[1].replaced_pool
    change = _one(forward, NODE_GROUP, f"pool-{pool}-")
    assert change.kind == "replace"
    assert any(reason.startswith("`instanceTypes`") for reason in change.reasons)
    field = next(f for f in change.fields if f.path == "instanceTypes")
    assert (field.before, field.after) == ([before], [after])
    assert not any("nodeGroupName" in warning for warning in change.warnings)  # generated names: no collision


def test_pool_size_change_updates_in_place_and_costs(forward: StackDiff, planted_repo: tuple[Path, Planted]) -> None:
    pool, before, after, price = planted_repo[1].resized_pool
    change = _one(forward, NODE_GROUP, f"pool-{pool}-")
    assert change.kind == "change"
    field = next(f for f in change.fields if f.path == "scalingConfig.desiredSize")
    assert (field.before, field.after, topic(field)) == (before, after, "pool size")
    cost = next(line for line in forward.cost.lines if f"`{pool}`" in line.item)
    assert cost.base and cost.head and cost.base.usd_per_hour is not None and cost.head.usd_per_hour is not None
    assert cost.head.usd_per_hour - cost.base.usd_per_hour == pytest.approx(price * (after - before), abs=0.01)


def test_widened_iam_statement_is_flagged(forward: StackDiff, planted_repo: tuple[Path, Planted]) -> None:
    policies = [r for r in forward.resources if r.type == "aws:iam/rolePolicy:RolePolicy"]
    widened = [f for r in policies for f in r.fields if f.widens]
    assert widened, [r.fields for r in policies]
    assert any(planted_repo[1].widened_artifact_prefix + "*" in f.note and "Resource" in f.note for f in widened)
    assert all(": statement " in f.path for f in widened)


def test_image_change_names_every_container(forward: StackDiff, planted_repo: tuple[Path, Planted]) -> None:
    target, image = planted_repo[1].image
    change = _one(forward, DGD, _slug(target))
    images = [f for f in change.fields if topic(f) == "image"]
    assert images and all(f.after == image and f.before != image for f in images)


def test_markdown_names_every_change_and_no_secret(
    forward: StackDiff, prod_renders: tuple[RenderedTree, RenderedTree], planted_repo: tuple[Path, Planted]
) -> None:
    base, head = prod_renders
    text = render_markdown(forward, base.label, head.label)
    planted = planted_repo[1]
    for expected in (
        _slug(planted.added_target),
        planted.replicas[1],
        planted.replaced_pool[2],
        planted.image[1],
        "IAM widens",
        "forces a new resource",
    ):
        assert expected in text, expected
    assert "[secret]" not in text and "kubeconfig" not in text
    assert text == render_markdown(forward, base.label, head.label), "the output is deterministic"


def test_reverse_diff_removes_the_target(
    prod_renders: tuple[RenderedTree, RenderedTree], planted_repo: tuple[Path, Planted]
) -> None:
    base, head = prod_renders
    backward = diff_stack("prod", head.render, base.render, load_rules())
    assert _one(backward, DGD, _slug(planted_repo[1].added_target)).kind == "remove"
    assert _one(backward, NODE_GROUP, f"pool-{planted_repo[1].replaced_pool[0]}-").kind == "replace"


def test_every_rendered_type_has_replacement_rules(prod_renders: tuple[RenderedTree, RenderedTree]) -> None:
    rules = load_rules()
    custom = {r.type for r in prod_renders[1].render.resources.values() if r.record.get("custom")}
    uncovered = sorted(t for t in custom if not any(rule.applies_to(t) for rule in rules.replacements))
    assert not uncovered, f"add these types to tools/rollout/provider_rules.yaml replacements: {uncovered}"


def _make_diff(repo: Path, stack: str, base: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-s",
            "-C",
            str(repo),
            "diff",
            f"STACK={stack}",
            f"BASE={base}",
            f"VENV={VENV}",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        env={**os.environ, **env},
    )


def test_make_diff_end_to_end_on_an_unchanged_stack(planted_repo: tuple[Path, Planted]) -> None:
    repo = planted_repo[0]
    result = _make_diff(repo, "dev", "HEAD~1")
    assert result.returncode == 0, result.stderr[-2000:]
    first = result.stdout.splitlines()[0]
    assert first.startswith("### `dev`: **±0 $/h**") and first.endswith("no resource changes"), first
    assert (repo / "build" / "pr-diff" / "dev.md").read_text() == result.stdout


# A small pure-Python package the project does not pin: the base imports it, the head no longer does.
EXTRA_REQUIREMENT, EXTRA_MODULE = "tomli-w==1.2.0", "tomli_w"


def test_make_diff_renders_a_base_of_other_requirements_in_a_virtualenv_of_its_own(tmp_path: Path) -> None:
    """The base pins and imports a package the head dropped (as `highspy` once was): rendered with the head's
    packages it fails; `make diff` renders it in a virtualenv of its own requirement files, cached by their hash."""
    repo = copy_project(tmp_path / "clone")
    requirements, render = repo / "requirements.txt", repo / "tools" / "render.py"
    originals = {path: (path.read_text(), path.stat()) for path in (requirements, render)}
    requirements.write_text(originals[requirements][0] + f"{EXTRA_REQUIREMENT}\n")
    future = "from __future__ import annotations\n"
    render.write_text(originals[render][0].replace(future, f"{future}import {EXTRA_MODULE}  # noqa: F401\n", 1))
    subprocess.run(["git", "-C", str(repo), *GIT_USER, "commit", "-qam", "base: pins and imports it"], check=True)
    for path, (text, status) in originals.items():
        path.write_text(text)
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))  # the head venv's stamps stay current
    subprocess.run(["git", "-C", str(repo), *GIT_USER, "commit", "-qam", "head: drops it"], check=True)

    subprocess.run(
        ["git", "-C", str(repo), "worktree", "add", "--detach", "-q", str(tmp_path / "old"), "HEAD~1"], check=True
    )
    old = subprocess.run(  # the base with the head's packages (`-o`: installing nothing into them)
        [
            "make",
            "-s",
            "-C",
            str(tmp_path / "old"),
            "render",
            "STACK=dev",
            f"VENV={VENV}",
            "-o",
            f"{VENV}/.render-deps",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert old.returncode != 0 and f"No module named '{EXTRA_MODULE}'" in old.stderr, old.stderr[-1000:]

    cache = tmp_path / "cache"
    result = _make_diff(repo, "dev", "HEAD~1", **{CACHE_ENV: str(cache)})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.startswith("### `dev`: ") and "no resource changes" in result.stdout.splitlines()[0]
    (venv,) = [path for path in (cache / "venvs").iterdir() if path.is_dir()]
    imported = subprocess.run([str(venv / "bin" / "python"), "-c", f"import {EXTRA_MODULE}"], check=False)
    assert imported.returncode == 0
    stamp = (venv / ".render-deps").stat().st_mtime_ns
    again = _make_diff(repo, "dev", "HEAD~1", **{CACHE_ENV: str(cache)})
    assert again.returncode == 0 and again.stdout == result.stdout
    assert (venv / ".render-deps").stat().st_mtime_ns == stamp, "the cached virtualenv is reused, not reinstalled"


def test_the_sample_comment_of_the_docs_is_current() -> None:
    """docs/pull-requests.md's sample is what `make diff-sample` writes for the planted pull request now."""
    doc = sample.DOC.read_text()
    regenerated = sample.with_sample(doc, sample.sample_markdown(VENV))
    assert regenerated == doc, f"{sample.DOC.relative_to(REPO)}: the sample comment is stale; run `make diff-sample`"
