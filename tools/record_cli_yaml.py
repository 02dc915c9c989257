"""Record how the pinned Pulumi CLI reads each stack file of tests/data/pulumi_cli_yaml.json.

    python -m tools.record_cli_yaml

Builds tools/e2e/gomod/stack-config-probe (the SDK's own stack-file loader, at the CLI's pinned version;
needs Go and the module proxy or a module cache), runs it on every case's `yaml` and writes what the
program would receive into the case's `cli` field. tests/test_stack_file_yaml.py checks the offline
reader (tools/stack_files.py) against every recorded row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
TABLE = PROJECT_DIR / "tests" / "data" / "pulumi_cli_yaml.json"
PROBE = PROJECT_DIR / "tools" / "e2e" / "gomod" / "stack-config-probe"


def main() -> int:
    table = json.loads(TABLE.read_text())
    with tempfile.TemporaryDirectory() as scratch:
        binary = Path(scratch) / "stack-config-probe"
        subprocess.run(["go", "build", "-o", str(binary), "."], cwd=PROBE, check=True)
        texts = [case["yaml"] for case in table["cases"]]
        env = {**os.environ, "TZ": "UTC"}  # the CLI names a numeric offset after the local zone when they agree
        run = subprocess.run(
            [str(binary)], input=json.dumps(texts), capture_output=True, text=True, check=True, env=env
        )
    for case, result in zip(table["cases"], json.loads(run.stdout), strict=True):
        case["cli"] = result
    TABLE.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
    print(f"recorded {len(texts)} cases -> {TABLE.relative_to(PROJECT_DIR)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
