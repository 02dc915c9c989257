"""Write `schemas/stack-outputs.v<major>.schema.json` from the pydantic contract (`make schema`); a major bump
replaces the previous major's file (serving_stack/contract/outputs.py)."""

import json
from pathlib import Path

from serving_stack.contract.outputs import MAJOR_VERSION, StackOutputs

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
SCHEMA_FILE = SCHEMA_DIR / f"stack-outputs.v{MAJOR_VERSION}.schema.json"


def schema_text() -> str:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **StackOutputs.model_json_schema()}
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    for previous in SCHEMA_DIR.glob("stack-outputs.v*.schema.json"):
        if previous != SCHEMA_FILE:
            previous.unlink()
            print(f"removed {previous} (an earlier major version)")
    SCHEMA_FILE.write_text(schema_text())
    print(f"wrote {SCHEMA_FILE}")
