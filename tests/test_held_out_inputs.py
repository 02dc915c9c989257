"""Held-out input kinds (issue 35) from tests/data/held_out_inputs.yaml, rendered as `make render` renders a
stack file: each kind's bad fragments refused (exit 2, one bounded line naming the key the user wrote, nothing
rendered), its valid variants rendered. One test per kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from bad_stack_helpers import ThrowawayProject, assert_refused, edited

TABLE = yaml.safe_load((Path(__file__).parent / "data" / "held_out_inputs.yaml").read_text())
KINDS: dict[str, dict[str, Any]] = {kind["kind"]: kind for kind in TABLE["kinds"]}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayProject:
    return ThrowawayProject(tmp_path_factory.mktemp("held-out"))


@pytest.mark.parametrize("name", KINDS)
def test_kind_refused_and_valid_variants_rendered(project: ThrowawayProject, name: str) -> None:
    kind = KINDS[name]
    assert kind["bad"] and kind["good"], f"{name}: a kind needs bad fragments and valid variants"
    placeholders = kind.get("placeholders", True)
    for case in kind["bad"]:
        assert_refused(project, edited(case.get("stack", kind.get("stack")), case["edits"]), case["key"], placeholders)
    for case in kind["good"]:
        outcome = project.render(edited(case.get("stack", kind.get("stack")), case["edits"]), placeholders)
        assert outcome.code == 0, (case["edits"], outcome.stderr[-600:])
