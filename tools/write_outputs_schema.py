"""Write `schemas/stack-outputs.v1.schema.json` from the pydantic contract (`make schema`)."""

import json
from pathlib import Path

from serving_stack.contract.outputs import StackOutputs

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schemas" / "stack-outputs.v1.schema.json"


def schema_text() -> str:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **StackOutputs.model_json_schema()}
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(schema_text())
    print(f"wrote {SCHEMA_FILE}")
