"""Write `schemas/stack-config.schema.json`, the JSON Schema of a `Pulumi.<stack>.yaml`, and
`docs/configuration.md`, the configuration reference generated from it (`make schema`).

The schema comes from the pydantic `StackConfig`, wrapped the way Pulumi lays a stack file out: every key
under `config:` carries the project prefix (`nemotron-lightning:targets`), the declared secrets are
`{secure: ...}` ciphertexts, and other namespaces (`aws:region`) belong to providers. Each field's
description is its attribute docstring; a type checked by a validator says what it allows as `x-allowed`
(the render enforces it, the schema only carries the words). `make lint` checks the stack files against
the schema. The reference is `docs/configuration.template.md` (the rules that span keys) followed by one
table per block: key, type, default, bounds, description. Tests fail when either file is stale.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from serving_stack.config.stack import PROVIDER_NAMESPACES, SECRET_KEYS, SECRETS, StackConfig
from serving_stack.config.types import MAX_STRING
from tools.stack_files import project_name

PROJECT_DIR = Path(__file__).resolve().parent.parent
SCHEMA_FILE = PROJECT_DIR / "schemas" / "stack-config.schema.json"
DOCS_FILE = PROJECT_DIR / "docs" / "configuration.md"
TEMPLATE_FILE = PROJECT_DIR / "docs" / "configuration.template.md"


def _untitled(node: Any) -> Any:
    """pydantic's titles (`Minsize`) say nothing the key does not: left out, so editors show descriptions."""
    if isinstance(node, dict):
        return {k: _untitled(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    return [_untitled(v) for v in node] if isinstance(node, list) else node


def stack_file_schema(project: str) -> dict[str, Any]:
    model = _untitled(StackConfig.model_json_schema())
    defs: dict[str, Any] = model.pop("$defs", {})
    defs["PulumiSecret"] = {
        "description": "A value set with `pulumi config set --secret`: ciphertext only, never plain text.",
        "x-allowed": "a Pulumi secret (`pulumi config set --secret`)",
        "type": "object",
        "properties": {
            "secure": {"type": "string", "minLength": 1, "description": "The secrets provider's ciphertext."}
        },
        "required": ["secure"],
        "additionalProperties": False,
    }
    properties = {f"{project}:{key}": value for key, value in model["properties"].items()}
    properties.update(
        {f"{project}:{key}": {"$ref": "#/$defs/PulumiSecret", "description": SECRETS[key]} for key in SECRET_KEYS}
    )
    config = {
        "type": "object",
        "description": model.get("description", ""),
        "properties": properties,
        "required": [f"{project}:{key}" for key in model.get("required", [])],
        # Provider namespaces (aws:region, kubernetes:..., pulumi:tags) pass; an unknown key of this project,
        # or of another namespace, does not.
        "patternProperties": {f"^({'|'.join(PROVIDER_NAMESPACES)}):.+$": {}},
        "additionalProperties": False,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Pulumi.<stack>.yaml of project {project}",
        "description": "Stack settings file; generated from StackConfig by tools/write_config_schema.py.",
        "type": "object",
        "properties": {
            "config": config,
            "environment": {"type": "array", "items": {"type": "string"}, "description": "Pulumi ESC environments."},
            "secretsprovider": {"type": "string", "description": "The stack's secrets provider (Pulumi)."},
            "encryptedkey": {"type": "string", "description": "The data key, encrypted by the secrets provider."},
            "encryptionsalt": {"type": "string", "description": "The passphrase secrets provider's salt."},
        },
        "additionalProperties": False,
        "$defs": defs,
    }


class _Reference:
    """One table per block of the schema, each block where the config first reaches it."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = schema["$defs"]
        self.sections: list[str] = []

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """The node without `$ref` and `Optional`, keeping the block's own description."""
        options = node.get("anyOf", [])
        optional = any(option.get("type") == "null" for option in options)
        field = {k: v for k, v in node.items() if k not in ("anyOf", "$ref", "description")}
        if optional and len(options) == 2:
            node = {**next(o for o in options if o.get("type") != "null"), **field}
        if "$ref" in node:
            node = {**self.defs[node["$ref"].rsplit("/", 1)[-1]], **field}
        return node

    def type_of(self, node: dict[str, Any], path: str) -> str:
        node = self.resolve(node)
        if "x-allowed" in node:
            return str(node["x-allowed"])
        if "enum" in node or "const" in node:
            return " \\| ".join(f"`{json.dumps(v)}`" for v in node.get("enum", [node.get("const")]))
        if "properties" in node:
            self.block(node, path)
            return f"block, [`{path}`](#{re.sub(r'[^a-z0-9 -]', '', path.lower()).replace(' ', '-')})"
        if "anyOf" in node:
            return " or ".join(self.type_of(option, path) for option in node["anyOf"])
        if node.get("type") == "array":
            return f"list of {self.type_of(node.get('items', {}), path + '[]')}"
        if node.get("type") == "object":
            keys = node.get("propertyNames", {})
            key = f"{self.type_of(keys, path)} to " if {"type", "enum", "x-allowed"} & set(keys) else ""
            values = node.get("additionalProperties", {})
            return f"map of {key}{self.type_of(values, path + '.*') if isinstance(values, dict) and values else 'any value'}"
        return str(node.get("type", "any value"))

    @staticmethod
    def bounds(node: dict[str, Any]) -> str:
        def number(value: Any) -> str:
            return f"{value:,}" if isinstance(value, int) else str(value)

        found = []
        for low, high, unit in (
            ("minimum", "maximum", ""),
            ("minItems", "maxItems", " items"),
            ("minLength", "maxLength", " characters"),
            ("minProperties", "maxProperties", " entries"),
        ):
            lower, upper = node.get(low), node.get(high)
            upper = None if unit == " characters" and upper == MAX_STRING else upper  # every string's (preface)
            if lower is not None and upper is not None:
                found.append(f"{number(lower)}..{number(upper)}{unit}")
            elif lower is not None or upper is not None:
                found.append(f"{'>=' if upper is None else '<='} {number(lower if upper is None else upper)}{unit}")
        others = (("exclusiveMinimum", ">"), ("exclusiveMaximum", "<"), ("multipleOf", "multiple of"))
        found += [f"{words} {number(node[key])}" for key, words in others if key in node]
        return "; ".join(found)

    def block(self, node: dict[str, Any], path: str) -> None:
        index = len(self.sections)
        self.sections.append("")
        rows = []
        for key, child in node["properties"].items():
            resolved = self.resolve(child)
            kind = self.type_of(child, f"{path}.{key}" if path else key.split(":", 1)[-1])
            if key in node.get("required", ()):
                default = "required"
            elif "default" in child:
                literal = "see its table" if "properties" in resolved else f"`{json.dumps(child['default'])}`"
                default = "unset" if child["default"] is None else literal
            else:  # a default_factory: an empty list or mapping
                empty = {"array": "`[]`", "object": "`{}`"}.get(resolved.get("type", ""), "unset")
                default = "unset" if "x-allowed" in resolved else empty
            inner = resolved.get("items", resolved.get("additionalProperties"))
            inner_bounds = self.bounds(self.resolve(inner)) if isinstance(inner, dict) else ""
            bounds = "; ".join(filter(None, [self.bounds(resolved), inner_bounds and f"each {inner_bounds}"]))
            description = " ".join(str(child.get("description", "")).split()).replace("|", "\\|")
            rows.append(f"| `{key.split(':', 1)[-1]}` | {kind} | {default} | {bounds} | {description} |")
        intro = " ".join(str(node.get("description", "")).split())
        heading = f"## `{path}`" if path else "## Top-level keys"
        table = "| key | type | default | bounds | description |\n|---|---|---|---|---|\n" + "\n".join(rows)
        self.sections[index] = f"{heading}\n\n" + (f"{intro}\n\n" if intro else "") + table + "\n"


def docs_text(schema: dict[str, Any]) -> str:
    reference = _Reference(schema)
    reference.block(schema["properties"]["config"], "")
    header = "<!-- Generated by `make schema` (tools/write_config_schema.py) from docs/configuration.template.md and the\n     config model's docstrings: edit those, not this file. -->\n\n"
    return header + TEMPLATE_FILE.read_text() + "\n" + "\n".join(reference.sections)


def schema_text() -> str:
    return json.dumps(stack_file_schema(project_name()), indent=2, sort_keys=True) + "\n"


def config_docs() -> str:
    return docs_text(stack_file_schema(project_name()))


if __name__ == "__main__":
    SCHEMA_FILE.write_text(schema_text())
    DOCS_FILE.write_text(config_docs())
    print(f"wrote {SCHEMA_FILE} and {DOCS_FILE}")
