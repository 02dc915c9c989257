"""The committed stack-file schema and configuration reference equal the ones generated from StackConfig,
every `Pulumi.<stack>.yaml` passes the schema, and it rejects what the program would reject: unknown keys,
plain-text secrets, wrong types."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tools.write_config_schema import DOCS_FILE, PROJECT_DIR, SCHEMA_FILE, config_docs, project_name, schema_text

PROJECT = project_name()
STACK_FILES = sorted(p for p in PROJECT_DIR.glob("Pulumi.*.yaml"))


def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_FILE.read_text())
    return jsonschema.validators.validator_for(schema)(schema)


def _errors(document: dict[str, Any]) -> list[str]:
    return [error.message for error in _validator().iter_errors(document)]


def test_committed_schema_is_generated() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), "run `make schema` and commit the result"


def test_committed_reference_is_generated() -> None:
    assert DOCS_FILE.read_text() == config_docs(), "run `make schema` and commit docs/configuration.md"


def _properties(node: Any) -> list[tuple[str, dict[str, Any]]]:
    """Every (key, schema) of the schema's properties, at any depth."""
    if isinstance(node, list):
        return [pair for item in node for pair in _properties(item)]
    if not isinstance(node, dict):
        return []
    own = list(node.get("properties", {}).items()) if isinstance(node.get("properties"), dict) else []
    return own + [pair for value in node.values() for pair in _properties(value)]


def test_the_reference_states_every_key_and_range() -> None:
    """Each property of the schema has a row, and each numeric range is in one of its key's rows."""
    rows = config_docs().splitlines()
    defs = json.loads(schema_text())["$defs"]
    for key, node in _properties([v for name, v in defs.items() if name != "PulumiSecret"]):
        mine = [row for row in rows if row.startswith(f"| `{key}` |")]
        assert mine, key
        for option in [node, *node.get("anyOf", [])]:
            if isinstance(option.get("minimum"), int) and isinstance(option.get("maximum"), int):
                assert any(f"{option['minimum']:,}..{option['maximum']:,}" in row for row in mine), key


def _undescribed(schema: dict[str, Any]) -> list[str]:
    return [key for key, node in _properties(schema) if not str(node.get("description", "")).strip()]


def test_every_property_is_described() -> None:
    """Each key of the stack file, at any depth, carries its attribute docstring into the schema (editor help)."""
    schema = json.loads(schema_text())
    assert len(_properties(schema)) > len(schema["$defs"]), "the walk finds no properties"
    assert _undescribed(schema) == []


def test_an_undescribed_property_is_found() -> None:
    schema = json.loads(schema_text())
    block, node = next((name, node) for name, node in schema["$defs"].items() if node.get("properties"))
    key = sorted(node["properties"])[-1]
    del schema["$defs"][block]["properties"][key]["description"]
    assert _undescribed(schema) == [key]


def test_the_reference_misses_a_planted_key() -> None:
    docs = config_docs()
    assert "| `planted` |" not in docs and "| `namespace` |" in docs


def test_there_are_stack_files() -> None:
    assert len(STACK_FILES) >= 2, STACK_FILES


@pytest.mark.parametrize("stack_file", STACK_FILES, ids=lambda p: p.name)
def test_every_stack_file_validates(stack_file: Path) -> None:
    assert _errors(yaml.safe_load(stack_file.read_text())) == []


def _prod() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text()))


def test_unknown_project_key_is_rejected_and_provider_keys_pass() -> None:
    stack = _prod()
    stack["config"][f"{PROJECT}:tragets"] = []
    stack["config"]["kubernetes:enableServerSideApply"] = True
    (message,) = _errors(stack)
    assert f"{PROJECT}:tragets" in message


def test_plain_text_secret_is_rejected() -> None:
    stack = _prod()
    stack["config"][f"{PROJECT}:hfToken"] = "hf_plain"
    assert any("not of type 'object'" in m for m in _errors(stack))
    stack["config"][f"{PROJECT}:hfToken"] = {"secure": "v1:AAAA"}
    assert _errors(stack) == []


def test_wrong_types_and_missing_required_keys_are_rejected() -> None:
    stack = _prod()
    stack["config"][f"{PROJECT}:targets"][0]["replicas"] = {"VllmDecodeWorker": "two"}
    assert any("'two'" in m for m in _errors(stack))
    stack = _prod()
    del stack["config"][f"{PROJECT}:modelCache"]
    assert any(f"'{PROJECT}:modelCache' is a required property" in m for m in _errors(stack))
    stack = _prod()
    stack["config"][f"{PROJECT}:modelCache"]["sizeGi"] = 10
    assert _errors(stack)
