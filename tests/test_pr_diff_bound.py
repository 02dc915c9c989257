"""Cutting the PR comment never breaks its Markdown: at every size, what is left has each `<details>` and code
fence closed, whole table rows under a header and its separator, and a note naming what was cut and where the
full diff is. Checked on a long comment made by the diff itself and on hand-made nestings."""

from __future__ import annotations

import re

import pytest
from pr_diff_helpers import markdown_problems

from tools.pr_diff.bound import bound_markdown
from tools.pr_diff.markdown import render_markdown
from tools.pr_diff.records import Render
from tools.pr_diff.stack_diff import diff_stack
from tools.rollout.rules import load_rules

LINK = "`full/prod.md` in the artifact `pr-diff-prod` of [the workflow run](https://example.invalid/run/1)"


def _record(i: int, value: str) -> dict:
    name = f"cm-{i:04d}"
    return {
        "type": "kubernetes:core/v1:ConfigMap",
        "name": name,
        "custom": True,
        "parent": "",
        "provider": "",
        "dependsOn": [],
        "inputs": {"metadata": {"name": name}, "data": {f"k{j}": f"{value}{j}" for j in range(4)}},
    }


def long_comment() -> str:
    """The whole diff of a change to hundreds of resources, with tables, nested folds and a fence."""
    base = Render.from_records([_record(i, "a" * 60) for i in range(400)], {})
    head = Render.from_records([_record(i, "b" * 60) for i in range(400)], {})
    diff = diff_stack("prod", base, head, load_rules())
    text = render_markdown(diff, "base", "head", max_bytes=None)
    return text + "\n```text\n" + "engine output line\n" * 200 + "```\n"


def test_the_whole_comment_is_valid_markdown_before_any_cut():
    text = long_comment()
    assert not markdown_problems(text)
    assert text.count("<details>") > 2 and "| | field | change |" in text and "```text" in text


@pytest.mark.parametrize("fraction", [0.03, 0.11, 0.26, 0.4, 0.55, 0.71, 0.9])
def test_a_cut_at_any_size_leaves_valid_markdown_says_what_was_cut_and_links_the_full_diff(fraction):
    text = long_comment()
    limit = int(len(text.encode()) * fraction)
    cut = bound_markdown(text, limit, LINK)
    assert len(cut.encode()) <= limit
    assert not markdown_problems(cut), markdown_problems(cut)[:5]
    note = cut.rstrip().splitlines()[-1]
    assert note.startswith("✂️ **Cut to fit a comment**") and LINK in note
    lines, kept = text.split("\n"), cut.split("\n")
    prefix = next(k for k in range(len(lines), -1, -1) if lines[:k] == kept[:k])
    left = int(re.search(r"(\d+) more line", note).group(1))
    assert left == sum(1 for line in lines[prefix:] if line.strip())
    assert cut.split("\n")[0] == text.split("\n")[0], "the first line is never cut"


def test_every_size_between_two_lines_of_a_nesting_cuts_cleanly():
    """A fence inside a fold inside a fold, a table under a header: each byte count from the smallest that
    holds the note to the whole text."""
    text = "\n".join(
        [
            "### `prod`: **+1.00 $/h (+1%)**",
            "",
            "- 💲 consequence",
            "",
            "<details><summary>Resources</summary>",
            "",
            "#### ✏️ Changed (2)",
            "",
            "  <details><summary>fields</summary>",
            "",
            "  | | field | change |",
            "  |---|---|---|",
            *[f"  | | `data.k{i}` | `a` → `b` |" for i in range(6)],
            "",
            "  </details>",
            "",
            "````",
            "preview output",
            "<details> inside a fence is text",
            "````",
            "",
            "</details>",
            "",
        ]
    )
    size = len(text.encode())
    smallest = next(limit for limit in range(size) if _fits(text, limit))
    notes = set()
    for limit in range(smallest, size):
        cut = bound_markdown(text, limit, LINK)
        assert len(cut.encode()) <= limit and not markdown_problems(cut), (limit, cut)
        notes.add(cut.rstrip().splitlines()[-1])
    assert any("the rest of Resources; the rest of fields" in note for note in notes), notes
    assert bound_markdown(text, size, LINK) == text


def _fits(text: str, limit: int) -> bool:
    try:
        bound_markdown(text, limit, LINK)
    except ValueError:
        return False
    return True


def test_a_diff_past_the_limit_folds_details_first_and_says_so():
    text = long_comment()
    capped = render_markdown(
        diff_stack(
            "prod",
            Render.from_records([_record(i, "a" * 60) for i in range(400)], {}),
            Render.from_records([_record(i, "b" * 60) for i in range(400)], {}),
            load_rules(),
        ),
        "base",
        "head",
        max_bytes=30_000,
        full_diff=LINK,
    )
    assert len(text.encode()) > 30_000 >= len(capped.encode())
    assert not markdown_problems(capped)
    assert capped.splitlines()[0] == text.splitlines()[0]
    assert "left out to fit a comment" in capped and LINK in capped
