"""YAML that is small on disk but huge or endless once read (alias bombs, recursive aliases, deep nesting,
merge keys) is refused in bounded time and memory, with one line naming the file."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from bad_stack_helpers import STACK_FILE, ThrowawayProject, assert_refused, edited

from serving_stack.facts.strict_files import MAX_DEPTH, MAX_NODES

DEV = edited("dev", {})
CACHE_LINE = "  nemotron-lightning:modelCache:\n"


def alias_bomb(levels: int, fan_out: int = 10) -> str:
    """`levels` anchors, each a list of `fan_out` aliases of the one before: fan_out**levels values."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * fan_out)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan_out)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\n{DEV}".replace("    drafts: []", f"    drafts: *a{levels - 1}")


def merge_bomb(levels: int, fan_out: int = 10) -> str:
    lines = ["m0: &m0 {" + ", ".join(f"k{i}: {i}" for i in range(fan_out)) + "}"]
    lines += [f"m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * fan_out)}]}}" for i in range(1, levels)]
    return "\n".join(lines) + "\n" + DEV


def nested(depth: int) -> str:
    return DEV.replace("    drafts: []", "    drafts: " + "[" * depth + "]" * depth)


CASES = {
    # 10**9 values from ~1 kB; PyYAML shares aliased nodes, the program's JSON encoding would not.
    "alias bomb": alias_bomb(9),
    "alias bomb just over the bound": alias_bomb(len(str(MAX_NODES))),
    "merge-key bomb": merge_bomb(7),
    "merge key": DEV.replace(
        CACHE_LINE, "  base: &cache {storageClassName: efs-ap}\n" + CACHE_LINE + "    <<: *cache\n"
    ),
    "recursive alias in a list": DEV.replace("    drafts: []", "    drafts: &loop [*loop]"),
    "recursive alias in a mapping": DEV.replace(CACHE_LINE, CACHE_LINE.rstrip("\n") + " &cache\n    self: *cache\n"),
    "nesting deeper than the bound": nested(MAX_DEPTH + 1),
    "nesting past Python's recursion limit": nested(5000),
    "aliases nesting past the depth bound": "\n".join(
        ["d0: &d0 [x]"] + [f"d{i}: &d{i} [*d{i - 1}]" for i in range(1, MAX_DEPTH + 2)]
    )
    + "\n"
    + DEV,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return ThrowawayProject(tmp_path_factory.mktemp("bad-yaml"))


@pytest.fixture(scope="module")
def warm_project(project):
    """Imports and caches warm, so what is measured is the refusal."""
    assert project.render(DEV).code == 0
    return project


@pytest.mark.parametrize("case", list(CASES))
def test_expanding_yaml_is_refused_in_bounded_time_and_memory(warm_project, case):
    project = warm_project
    tracemalloc.start()
    started = time.perf_counter()
    try:
        line = assert_refused(project, CASES[case], STACK_FILE)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 10, f"{elapsed:.1f} s"  # measured here: 0.5 s or less each, under tracemalloc
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB"  # measured: 1 MiB or less
    assert len(line) < 200


def test_the_bounds_leave_room_for_real_stacks(project):
    """Anchors and aliases within the bounds are read as the CLI reads them."""
    aliased = "x-anchors:\n  drafts: &drafts []\n" + DEV.replace("drafts: []", "drafts: *drafts")
    assert project.render(aliased).code == 0
    assert project.render(nested(MAX_DEPTH - 8)).code == 2  # deep, but refused by the config types, not the reader
