"""python -m tools.rollout build/<stack>/resources.json [--markdown OUT]

Prints the cold-start and rollout sections (Markdown) and one line per finding on stderr; exits 1 when a finding is
blocking (a wait that can expire, a replacement that collides or that protect refuses), 2 on a bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tools.rollout.report import analyse, markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.rollout", description=__doc__.split("\n\n")[1])
    parser.add_argument("resources", type=Path, help="resources.json written by the render")
    parser.add_argument("--markdown", type=Path, help="also write the section to this file")
    args = parser.parse_args(argv)
    try:
        records = json.loads(args.resources.read_text())
    except (OSError, json.JSONDecodeError) as error:
        print(f"error: {args.resources}: {error}", file=sys.stderr)
        return 2
    report = analyse(records)
    section = markdown(report)
    sys.stdout.write(section)
    if args.markdown:
        args.markdown.write_text(section)
    for finding in report.findings:
        print(finding.line(), file=sys.stderr)
    if report.blocking:
        print(f"error: {len(report.blocking)} blocking rollout finding(s) in {args.resources}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
