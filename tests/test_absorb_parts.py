"""The pieces of `make absorb` on small inputs: the performance-table parser, rename detection, the stacks a
revision breaks, and provenance from a git checkout or a plain copy."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from serving_stack.facts.catalog import Recipe, Upstream, load_catalog
from tools.absorb.changes import Manifests, Selection, broken_selections, compare_targets, read_stacks
from tools.absorb.upstream import (
    ProvenanceError,
    TableError,
    published_criteria,
    published_figures,
    resolve,
    rows_in,
)

HEADER = (
    "| Recipe | FW | Synthetic AL | Concurrency | TTFT p50 (ms) | Output tok/s/GPU | Tok/s/user |\n"
    "|--------|----|--------------|-------------|---------------|------------------|------------|\n"
)


def test_rows_are_read_by_column_name_with_unpublished_cells_unknown():
    text = (
        "intro\n\n" + HEADER + "| `vllm/agg-x/deploy.yaml` | vLLM | 3.69 | 20 | 212.57 | 2,004.06 | 100.20 |\n"
        "| [vllm/agg-y](vllm/agg-y/deploy.yaml) | vLLM | 0.0 | - | n/a |  | 42 |\n\nafter the table | not a row |\n"
    )
    x, y = rows_in(text, "perf/README.md")
    assert (x.target_id, x.figures, x.source) == (
        "vllm/agg-x",
        {
            "concurrency": 20.0,
            "ttftP50Ms": 212.57,
            "outputTokensPerSecondPerGpu": 2004.06,
            "tokensPerSecondPerUser": 100.2,
            "syntheticAcceptanceLength": 3.69,
        },
        "perf/README.md:5",
    )
    assert y.target_id == "vllm/agg-y"
    assert y.figures == {  # a synthetic acceptance length of 0: measured without speculative decoding
        "concurrency": None,
        "ttftP50Ms": None,
        "outputTokensPerSecondPerGpu": None,
        "tokensPerSecondPerUser": 42.0,
        "syntheticAcceptanceLength": None,
    }


def test_ttft_in_seconds_is_converted_and_a_missing_column_is_unknown():
    text = "| Recipe | TTFT p50 (s) |\n|---|---|\n| `trtllm/agg-z/deploy.yaml` | 1.5 |\n"
    (row,) = rows_in(text, "README.md")
    assert row.figures == {
        "concurrency": None,
        "ttftP50Ms": 1500.0,
        "outputTokensPerSecondPerGpu": None,
        "tokensPerSecondPerUser": None,
        "syntheticAcceptanceLength": None,
    }


def test_a_cell_that_is_no_figure_names_file_line_and_column():
    with pytest.raises(TableError, match=r"^perf/README.md:3, column 'ttft p50 \(ms\)': 'fast' is neither a number"):
        rows_in(HEADER + "| `vllm/a/deploy.yaml` | vLLM | 3.69 | 8 | fast | 1 | 2 |\n", "perf/README.md")


def test_tables_without_a_recipe_column_are_not_performance_tables():
    assert rows_in("| Method | Concurrency |\n|---|---|\n| MTP | 7 |\n", "README.md") == []


def test_the_same_recipe_with_other_figures_in_two_files_is_an_error(tmp_path):
    (tmp_path / "README.md").write_text(HEADER + "| `vllm/a/deploy.yaml` | vLLM | 8 | 100 | 1 | 2 |\n")
    (tmp_path / "perf").mkdir()
    (tmp_path / "perf" / "README.md").write_text(HEADER + "| `vllm/a/deploy.yaml` | vLLM | 8 | 200 | 1 | 2 |\n")
    with pytest.raises(TableError, match=r"vllm/a has other figures than at README.md:3"):
        published_figures(tmp_path)


def test_criteria_are_read_from_the_prose(tmp_path):
    (tmp_path / "README.md").write_text("- Pass criteria: `tok/s/user >= 45.5` and TTFT p50 < 3s\n")
    assert published_criteria(tmp_path) == {"minTokensPerSecondPerUser": 45.5, "maxTtftP50Ms": 3000.0}


def manifests_of(target_id: str, new_name: str | None = None) -> Manifests:
    """A catalog target as the comparison sees it; `new_name` renames its objects everywhere, as upstream would."""
    recipe = load_catalog().recipe(target_id)
    config_map, dgd = recipe.copy_manifests()
    if new_name:
        config_map, dgd = yaml.safe_load_all(yaml.safe_dump_all([config_map, dgd]).replace(recipe.name, new_name))
    return Manifests(Recipe(recipe.entry, config_map, dgd), recipe.entry.model_dump(exclude={"id"}))


def test_a_renamed_manifest_is_a_rename_and_a_sibling_for_another_gpu_is_not():
    catalog = load_catalog()
    sibling_pairs = [
        (a, b)
        for a in catalog.recipes.values()
        for b in catalog.recipes.values()
        if a.id < b.id
        and a.gpu_products != b.gpu_products
        and a.speculative_decoding == b.speculative_decoding
        and a.component_names == b.component_names
        and a.backend == b.backend
    ]
    a, b = sibling_pairs[0]
    renamed = manifests_of(a.id, new_name="renamed-dgd")
    changes = compare_targets({a.id: manifests_of(a.id)}, {"x/renamed": renamed})
    assert [(old, new) for old, new, _ in changes.renamed] == [(a.id, "x/renamed")]
    assert "x/renamed" not in changes.changed
    changes = compare_targets({a.id: manifests_of(a.id)}, {b.id: manifests_of(b.id)})
    assert (changes.removed, changes.added, changes.renamed) == ([a.id], [b.id], [])


def test_a_stack_selecting_a_removed_target_is_told_the_closest_replacement():
    catalog = load_catalog()
    removed, *others = sorted(catalog.recipes)
    previous = {t: manifests_of(t) for t in catalog.recipes}
    current = {t: previous[t] for t in others}
    changes = compare_targets(previous, current)
    stack = [
        Selection("Pulumi.prod.yaml", 2, removed),
        Selection("Pulumi.prod.yaml", 3, others[0]),
        Selection("Pulumi.dev.yaml", 0, "vllm/never-was"),
    ]
    (gone, unknown) = broken_selections(stack, changes, previous, current)
    assert gone.startswith(f"Pulumi.prod.yaml targets[2]: {removed} was removed; closest replacement: ")
    assert unknown == "Pulumi.dev.yaml targets[0]: vllm/never-was is in neither revision"


def test_the_committed_stacks_are_read_with_their_target_indexes():
    from tools.mock_runtime import PROJECT_DIR

    found = read_stacks(PROJECT_DIR).selections
    assert {s.stack_file for s in found} >= {"Pulumi.dev.yaml", "Pulumi.prod.yaml"}
    assert all(s.target_id and s.index >= 0 for s in found)


RECORDED = Upstream(
    repository="ai-dynamo/dynamo", path="recipes/nemotron-3.5-lightning", commit="70d2ef43", date="2026-08-11"
)


def git(directory, *args: str) -> str:
    env = {
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": "/usr/bin:/bin",
        "GIT_AUTHOR_DATE": "2026-09-01T08:00:00Z",
        "GIT_COMMITTER_DATE": "2026-09-02T08:00:00Z",
    }
    return subprocess.run(
        ["git", "-C", str(directory), "-c", "user.name=u", "-c", "user.email=u@example.com", *args],
        check=True,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()


def test_a_plain_copy_needs_the_date_unless_it_is_the_recorded_commit(tmp_path):
    assert resolve(tmp_path, "70d2ef43", None, RECORDED) == RECORDED
    with pytest.raises(ProvenanceError, match="is not a git checkout, so the date of 1234567 is unknown: give DATE="):
        resolve(tmp_path, "1234567", None, RECORDED)
    assert resolve(tmp_path, "1234567", "2026-09-30", RECORDED).date == "2026-09-30"
    with pytest.raises(ProvenanceError, match="is not a git commit id"):
        resolve(tmp_path, "main", None, RECORDED)


def test_a_git_checkout_must_be_clean_and_at_the_commit(tmp_path):
    recipes = tmp_path / "recipes" / "nemotron-3.5-lightning"
    recipes.mkdir(parents=True)
    (recipes / "README.md").write_text("one\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "one")
    first = git(tmp_path, "rev-parse", "--short=10", "HEAD")
    assert resolve(recipes, first, None, RECORDED) == Upstream(
        repository=RECORDED.repository, path="recipes/nemotron-3.5-lightning", commit=first, date="2026-09-02"
    )
    with pytest.raises(ProvenanceError, match="git says"):
        resolve(recipes, first, "2026-01-01", RECORDED)
    (recipes / "README.md").write_text("two\n")
    with pytest.raises(ProvenanceError, match="has local changes"):
        resolve(recipes, first, None, RECORDED)
    git(tmp_path, "commit", "-qam", "two")
    with pytest.raises(ProvenanceError, match=f"is checked out at .*, not {first}"):
        resolve(recipes, first, None, RECORDED)
    with pytest.raises(ProvenanceError, match="commit deadbeef is not in the git checkout"):
        resolve(recipes, "deadbeef", None, RECORDED)
