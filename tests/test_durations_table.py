"""catalog/durations.yaml is the one table of step durations: every figure says its kind and source, a step is
defined once in it, every step the models name is in it and every step in it is used, and no other data file
or module defines a duration of its own (a wait limit the stack sets is not a duration, and says so by its name
or in KNOWN_LIMITS below)."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from serving_stack.errors import ConfigError
from serving_stack.facts.durations import load_durations
from serving_stack.facts.strict_files import DATA_DIR
from tools.mock_runtime import PROJECT_DIR

TABLE_FILE = DATA_DIR / "durations.yaml"
TABLE = load_durations()
# A repository reference (owner/repo#n, a path), documentation, a blog, a facts file or a benchmark.
NAMED_SOURCE = re.compile(r"[\w.-]+/[\w.-]+|documentation|FAQ|blog|What's New|FACTS\.md|README|API reference|quotas")
DURATION_NAME = re.compile(r"(?i)(seconds|minutes|typical|mbps|mbpersecond|secondspergb|_s$|_min$|duration)")
# Names of values the stack sets to bound or pace a wait: limits, not durations of the world.
LIMIT_NAME = re.compile(
    r"(?i)(timeout|deadline|budget|poll|interval|period|cooldown|stabili[sz]ation|wait|slack|ttl|allowance|window|per_hour|per_minute)"
)
# Duration-named constants that are not durations of a cold-start step, with why (module path, name).
KNOWN_LIMITS = {
    ("prewarm/prewarm.py", "PROGRESS_SECONDS"): "how often prewarm logs its progress",
    ("prewarm/prewarm.py", "STATE_SAVE_SECONDS"): "how often prewarm saves its node-local state",
}
SKIPPED_DIRS = {"build", "tests", "node_modules"}  # and every hidden directory (virtualenvs, .git)


def _figures() -> Iterator[tuple[str, Any]]:
    for section in ("steps", "imagePull", "rates", "images"):
        for name, figure in getattr(TABLE, section).items():
            yield f"{section}.{name}", figure


def test_every_figure_that_is_not_an_estimate_names_its_source():
    unsourced = [name for name, f in _figures() if f.kind != "estimate" and not NAMED_SOURCE.search(f.source)]
    assert unsourced == []


def test_an_estimate_that_does_not_say_so_is_refused(tmp_path):
    data = yaml.safe_load(TABLE_FILE.read_text())
    measured = next(name for name, step in data["steps"].items() if step["kind"] == "measured")
    data["steps"][measured]["kind"] = "estimate"
    (tmp_path / TABLE_FILE.name).write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=f"steps.{measured}"):
        load_durations(tmp_path)


def test_a_step_defined_twice_in_the_table_is_refused(tmp_path):
    text = TABLE_FILE.read_text()
    first = next(iter(TABLE.steps))
    again = (
        f'steps:\n  {first}:\n    seconds: 1\n    kind: estimate\n    source: "estimate: again"\n    read: 2026-12-02\n'
    )
    (tmp_path / TABLE_FILE.name).write_text(text.replace("steps:\n", again, 1))
    with pytest.raises(ConfigError, match="duplicate key"):
        load_durations(tmp_path)


def _project_files(suffix: str) -> list[Path]:
    """The project's own files (no hidden directory such as a virtualenv, no build output, no tests)."""
    found = []
    for directory, subdirectories, files in os.walk(PROJECT_DIR):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d not in SKIPPED_DIRS)
        found += [Path(directory) / f for f in sorted(files) if f.endswith(suffix)]
    return found


def _python_files() -> list[Path]:
    return _project_files(".py")


def _string_literals() -> set[str]:
    found: set[str] = set()
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    rules = yaml.safe_load((PROJECT_DIR / "tools" / "rollout" / "provider_rules.yaml").read_text())
    found |= set(rules["aws"]["durations"].values())
    found |= {p["duration"] for p in rules["kubernetes"]["provisioners"].values()}
    return found


def test_every_step_and_rate_in_the_table_is_named_by_a_model():
    named = _string_literals()
    unused = sorted(name for name in [*TABLE.steps, *TABLE.rates] if name not in named)
    assert unused == [], "figures no model reads: remove them or use them"


def _sourced_durations(document: Any, trail: tuple[str, ...] = ()) -> Iterator[str]:
    """Key paths of sourced durations in a parsed data file: a duration-named number beside a `source` or
    `basis`, whose name is not a limit's."""
    if isinstance(document, dict):
        if {"source", "basis"} & set(document):
            for key, value in document.items():
                numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
                path = ".".join((*trail, str(key)))
                if numeric and DURATION_NAME.search(path) and not LIMIT_NAME.search(path):
                    yield path
        for key, value in document.items():
            yield from _sourced_durations(value, (*trail, str(key)))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _sourced_durations(value, (*trail, str(index)))


def _duration_literals(source: str) -> Iterator[str]:
    """Names given a non-zero number in a module whose name says duration and not limit."""
    for node in ast.walk(ast.parse(source)):
        pairs: list[tuple[str, ast.expr | None]] = []
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
                if name:
                    pairs.append((name, node.value))
        elif isinstance(node, ast.keyword) and node.arg:
            pairs.append((node.arg, node.value))
        for name, value in pairs:
            if (
                isinstance(value, ast.Constant)
                and isinstance(value.value, (int, float))
                and not isinstance(value.value, bool)
                and value.value
                and DURATION_NAME.search(name)
                and not LIMIT_NAME.search(name)
            ):
                yield name


def test_no_other_data_file_defines_a_duration():
    found = []
    for path in _project_files(".yaml"):
        relative = path.relative_to(PROJECT_DIR)
        if path == TABLE_FILE:
            continue
        for document in yaml.safe_load_all(path.read_text()):
            found += [f"{relative}: {p}" for p in _sourced_durations(document)]
    assert found == [], "a duration belongs in catalog/durations.yaml"


def test_no_module_defines_a_duration():
    found = []
    for path in _python_files():
        relative = str(path.relative_to(PROJECT_DIR))
        found += [f"{relative}: {n}" for n in _duration_literals(path.read_text()) if (relative, n) not in KNOWN_LIMITS]
    assert found == [], "a duration belongs in catalog/durations.yaml; a limit the stack sets says so in its name"


def test_the_scans_find_a_second_definition():
    """The node-readiness file this table replaced, and a module constant like the ones it held."""
    old_file = {
        "phases": {"engineStart": {"seconds": 90, "estimate": True, "source": "estimate: engine start"}},
        "runtimeImageCompressedGB": {"value": 9.5, "source": "estimate"},
        "imagePullAllowanceSeconds": 600,
        "readiness": {"imagePullAllowanceSeconds": 600, "source": "a wait limit"},
    }
    assert list(_sourced_durations(old_file)) == ["phases.engineStart.seconds"]
    module = "ENGINE_START_SECONDS = 90\nDEFAULT_TIMEOUT_SECONDS = 600\nelapsed_seconds = 0.0\n"
    assert list(_duration_literals(module)) == ["ENGINE_START_SECONDS"]


def test_the_known_limits_still_exist():
    """A limit listed here that no longer exists is dead weight."""
    for relative, name in KNOWN_LIMITS:
        assert name in set(_duration_literals((PROJECT_DIR / relative).read_text())), (relative, name)
