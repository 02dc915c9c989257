"""Held-out input kinds (issue 35) from tests/data/held_out_inputs.yaml, run as a user runs them on a stack file
in a throwaway project: `make render` (or `make plan WRITE=1`, then the render, for `tool: plan-write`). Each
kind's bad fragments are refused (exit 2, one bounded line naming the key the user wrote, nothing rendered or
written); its valid variants pass. One test per kind."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from bad_stack_helpers import STACK, STACK_FILE, Raw, ThrowawayProject, assert_refused, edited

from serving_stack.errors import MAX_LINE
from tools.plan_capacity.cli import main as plan_main


class _Loader(yaml.SafeLoader):
    """`!raw "yes"`: a value written verbatim into the stack file (`Raw`), as a user types it."""


_Loader.add_constructor("!raw", lambda loader, node: Raw(loader.construct_scalar(node)))
TABLE = yaml.load((Path(__file__).parent / "data" / "held_out_inputs.yaml").read_text(), Loader=_Loader)
KINDS: dict[str, dict[str, Any]] = {kind["kind"]: kind for kind in TABLE["kinds"]}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayProject:
    return ThrowawayProject(tmp_path_factory.mktemp("held-out"))


def plan_write(project: ThrowawayProject, content: str) -> tuple[int, str, str]:
    """`make plan STACK=case WRITE=1` on the stack file: exit code, stderr, the stack file after it."""
    (project.root / STACK_FILE).write_text(content)
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        code = plan_main(["--stack", STACK, "--project-dir", str(project.root), "--write"])
    return code, stderr.getvalue(), (project.root / STACK_FILE).read_text()


def check_case(project: ThrowawayProject, kind: dict[str, Any], case: dict[str, Any], bad: bool) -> None:
    content, placeholders = edited(case.get("stack", kind.get("stack")), case["edits"]), kind.get("placeholders", True)
    if kind.get("tool") == "plan-write":
        code, stderr, after = plan_write(project, content)
        if bad:
            (line,) = stderr.splitlines()
            assert code == 2 and line.startswith(f"error: {case['key']}: "), stderr[:600]
            assert len(line) <= len("error: ") + MAX_LINE and after == content, "refused, yet the file changed"
            return
        assert code == 0, stderr[-600:]
        content = after
    if bad:
        assert_refused(project, content, case["key"], placeholders)
    else:
        outcome = project.render(content, placeholders)
        assert outcome.code == 0, (case["edits"], outcome.stderr[-600:])


@pytest.mark.parametrize("name", KINDS)
def test_kind_refused_and_valid_variants_pass(project: ThrowawayProject, name: str) -> None:
    kind = KINDS[name]
    assert kind["bad"] and kind["good"], f"{name}: a kind needs bad fragments and valid variants"
    for case in kind["bad"]:
        check_case(project, kind, case, bad=True)
    for case in kind["good"]:
        check_case(project, kind, case, bad=False)
