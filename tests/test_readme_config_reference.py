"""The configuration reference (docs/configuration.md) states every numeric and list-length bound the config model enforces: each
bounded key of the generated schema (`schemas/stack-config.schema.json`, `make schema`) has a row naming its
lower and upper bound, so a new bound without documentation fails here."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tools.mock_runtime import PROJECT_DIR

SCHEMA = json.loads((PROJECT_DIR / "schemas" / "stack-config.schema.json").read_text())
BOUNDS = ("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxItems", "minItems")
UPPER = ("maximum", "exclusiveMaximum", "maxItems")


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def bounded_keys() -> dict[str, dict[str, float]]:
    """Key path (`aws.nodePools[].maxSize`, `*` for a map's values) -> its bounds, for numbers with a maximum and
    lists with a maximum length."""
    found: dict[str, dict[str, float]] = {}

    def walk(node: dict[str, Any], path: str) -> None:
        node = _resolve(node)
        for alternative in node.get("anyOf", []) + node.get("oneOf", []) + node.get("allOf", []):
            walk(alternative, path)
        bounds = {k: node[k] for k in BOUNDS if k in node}
        if any(bound in bounds for bound in UPPER):
            found.setdefault(path, {}).update(bounds)
        for name, child in node.get("properties", {}).items():
            walk(child, f"{path}.{name}" if path else name)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{path}.*")

    walk(SCHEMA, "")
    return {path.split(":", 1)[1]: bounds for path, bounds in found.items() if ":" in path}


def reference_rows() -> dict[str, str]:
    """Key path -> its table row; a cell `a.b.min` / `max` names `a.b.min` and `a.b.max`."""
    section = (PROJECT_DIR / "docs" / "configuration.md").read_text()
    rows: dict[str, str] = {}
    block = None
    for line in section.splitlines():
        if heading := re.match(r"^## `([^`]+)`", line):
            block = heading.group(1)
        elif block and line.startswith("| `"):
            keys = re.findall(r"`([^`]+)`", line.strip("|").split("|")[0])
            prefix = keys[0].rsplit(".", 1)[0] + "." if "." in keys[0] else ""
            root = keys[0].split(".")[0]
            for index, key in enumerate(keys):
                full = key if index == 0 or key.split(".")[0] == root else prefix + key
                rows[f"{block}.{full}"] = line
    return rows


def _row_for(key: str, rows: dict[str, str]) -> str | None:
    spellings = (key, key.replace(".*", ".<id>"), key.replace(".*", ""), key.replace("[]", "").replace(".*", ""))
    return next((rows[s] for s in spellings if s in rows), None)


def _spelled(number: float) -> set[str]:
    value = int(number) if float(number).is_integer() else number
    return {str(value), f"{value:,}"} if isinstance(value, int) else {str(value)}


KEYS = bounded_keys()
ROWS = reference_rows()


def test_the_schema_has_bounded_keys():
    assert len(KEYS) > 20


@pytest.mark.parametrize("key", sorted(KEYS))
def test_readme_states_the_bounds_of(key):
    row = _row_for(key, ROWS)
    assert row is not None, f"docs/configuration.md has no row for {key}"
    for bound, number in KEYS[key].items():
        stated = any(re.search(rf"(?<!\d)(?<!\d[,.]){re.escape(s)}(?!\d|[,.]\d)", row) for s in _spelled(number))
        assert stated, f"{key}: {bound} {number} not stated in: {row}"
