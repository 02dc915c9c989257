"""Judge a rendered `resources.json` with the pack and print the engine-style report.

    python -m policy.nemotron_policies.cli --stack prod build/prod/resources.json    # from the repository
    python -m nemotron_policies.cli --stack prod /path/to/resources.json            # from policy/
    ... --manifests build/prod/manifests --checkov .venv-checkov/bin/checkov         # + checkov's checks

Exit status: 0 without a mandatory violation, 1 with one, 2 when the records or the pack config cannot be
read (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from .checkov_gate import CheckovError, checkov_violations
from .offline import evaluate, format_report
from .records import RecordsError, load_records

MAX_ERROR = 300


def _one_line(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= MAX_ERROR else line[:MAX_ERROR] + "..."


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m policy.nemotron_policies.cli", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("resources", type=Path, help="a resources.json written by the offline render")
    parser.add_argument("--stack", required=True, help="the stack the records belong to (decides protected stacks)")
    parser.add_argument("--project", help="the Pulumi project (default: read from the records)")
    parser.add_argument("--policy-config", type=Path, help="pack config JSON, as `pulumi --policy-pack-config`")
    parser.add_argument("--manifests", type=Path, help="rendered manifests for checkov's Kubernetes checks")
    parser.add_argument("--checkov", type=Path, help="the checkov executable (with --manifests)")
    parser.add_argument(
        "--checkov-gate", type=Path, default=Path(".checkov/gate.yaml"), help="which checkov config judges which file"
    )
    args = parser.parse_args(argv)
    if bool(args.manifests) != bool(args.checkov):
        parser.error("--manifests and --checkov go together")
    try:
        records = load_records(args.resources, args.stack, args.project)
        pack_config = json.loads(args.policy_config.read_text()) if args.policy_config else None
        violations = evaluate(records, pack_config, stack=args.stack)
        if args.manifests:
            violations += checkov_violations(args.manifests, args.checkov_gate, args.checkov)
    except (RecordsError, CheckovError, OSError, ValueError) as error:
        print(f"error: {_one_line(str(error))}", file=sys.stderr)
        return 2
    sys.stdout.write(format_report(violations))
    return 1 if any(v.mandatory for v in violations) else 0


if __name__ == "__main__":
    sys.exit(main())
