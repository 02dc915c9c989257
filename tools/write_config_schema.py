"""Write `schemas/stack-config.schema.json`, the JSON Schema of a `Pulumi.<stack>.yaml` (`make schema`).

Generated from the pydantic `StackConfig`, wrapped the way Pulumi lays a stack file out: every key under
`config:` carries the project prefix (`nemotron-lightning:targets`), the declared secrets are
`{secure: ...}` ciphertexts, and other namespaces (`aws:region`) belong to providers. `make lint` checks
the stack files against it with check-jsonschema, so a typo fails in CI before any preview runs.
Value rules that live in pydantic validators (semver tags, DNS labels) are not in the schema; the
render still enforces them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from serving_stack.config.stack import PROVIDER_NAMESPACES, SECRET_KEYS, StackConfig

PROJECT_DIR = Path(__file__).resolve().parent.parent
SCHEMA_FILE = PROJECT_DIR / "schemas" / "stack-config.schema.json"


def project_name(project_dir: Path = PROJECT_DIR) -> str:
    return str(yaml.safe_load((project_dir / "Pulumi.yaml").read_text())["name"])


def stack_file_schema(project: str) -> dict[str, Any]:
    model = StackConfig.model_json_schema()
    defs: dict[str, Any] = model.pop("$defs", {})
    defs["PulumiSecret"] = {
        "description": "A value set with `pulumi config set --secret`: ciphertext only, never plain text.",
        "type": "object",
        "properties": {"secure": {"type": "string", "minLength": 1}},
        "required": ["secure"],
        "additionalProperties": False,
    }
    properties = {f"{project}:{key}": value for key, value in model["properties"].items()}
    properties.update({f"{project}:{key}": {"$ref": "#/$defs/PulumiSecret"} for key in SECRET_KEYS})
    config = {
        "type": "object",
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
            "environment": {"type": "array", "items": {"type": "string"}},
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
        },
        "additionalProperties": False,
        "$defs": defs,
    }


def schema_text() -> str:
    return json.dumps(stack_file_schema(project_name()), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(schema_text())
    print(f"wrote {SCHEMA_FILE}")
