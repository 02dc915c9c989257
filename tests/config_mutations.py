"""Hypothesis strategies that break a valid stack config the ways a hand edit does: a key deleted, a value of
another type, a random JSON value at a random path, a list item duplicated, an empty string, a huge number,
a long string. Long strings are made of one marker character, so a test can measure how much of them an
error line repeats."""

from __future__ import annotations

import copy
from typing import Any, Union

from hypothesis import strategies as st

MARKER = "\u00a7"  # §: appears in no message of the stack, so every § in an error line is echoed input
LONG_STRINGS = (MARKER * 250, MARKER * 5000, "a" + MARKER * 100_000)
HUGE_NUMBERS = (10**30, -(10**30), 2**63, -(2**63) - 1, 1e308, -1e308, float("inf"), float("-inf"), 1e-300)
Path = tuple[Union[str, int], ...]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from(HUGE_NUMBERS),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["", "0", "true", "yes", "1Gi", "us-east-1"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)


def paths(node: Any, prefix: Path = ()) -> list[Path]:
    """Every path to a value inside a document (not the root)."""
    found: list[Path] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        found.append((*prefix, key))
        found += paths(child, (*prefix, key))
    return found


def _parent(document: Any, path: Path) -> Any:
    node = document
    for part in path[:-1]:
        node = node[part]
    return node


def _other_type(value: Any) -> list[Any]:
    """Values of every other JSON type."""
    candidates = ["2", 2, 2.0, True, None, [], {}, [value], {"value": value}]
    return [c for c in candidates if type(c) is not type(value)]


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any], max_mutations: int = 3) -> dict[str, Any]:
    """`base` with 1..max_mutations random edits."""
    document = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, max_mutations))):
        targets = paths(document)
        if not targets:
            break
        path = draw(st.sampled_from(targets))
        parent, key = _parent(document, path), path[-1]
        operation = draw(st.sampled_from(["delete", "retype", "insert", "duplicate", "empty", "huge", "long", "set"]))
        if operation == "delete":
            del parent[key]
        elif operation == "retype":
            parent[key] = draw(st.sampled_from(_other_type(parent[key])))
        elif operation == "insert" and isinstance(parent[key], dict):
            parent[key][draw(st.text(min_size=1, max_size=12) | st.sampled_from(LONG_STRINGS))] = draw(json_values)
        elif operation == "duplicate" and isinstance(parent[key], list) and parent[key]:
            parent[key].append(copy.deepcopy(draw(st.sampled_from(parent[key]))))
        elif operation == "empty":
            parent[key] = ""
        elif operation == "huge":
            parent[key] = draw(st.sampled_from(HUGE_NUMBERS))
        elif operation == "long":
            parent[key] = draw(st.sampled_from(LONG_STRINGS))
        else:
            parent[key] = draw(json_values)
    return document
