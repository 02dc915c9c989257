"""What a pull request changes in a stack, as Markdown for the PR comment (`make diff`).

    python -m tools.diff --stack prod --base origin/main [--out build/prod/diff.md]

Renders BASE (a temporary git worktree, through its own `make render`) and the working tree offline,
compares `build/<stack>/{resources.json,outputs.json,policy-report.txt}` and prints resources added,
removed, replaced (`catalog/replacement_rules.yaml`) and changed with their changed fields, the cost
per hour, and the policy result. Secrets and kubeconfig never appear. Exit 0: diff printed; 1: the
working tree violates a mandatory policy (diff printed); 2: a tree does not render (message printed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tools.e2e.engine_diff import engine_preview, not_previewable
from tools.pr_diff.markdown import render_markdown
from tools.pr_diff.records import Render
from tools.pr_diff.render_ref import RenderError, render_base_and_head
from tools.pr_diff.replacement import load_rules
from tools.pr_diff.stack_diff import diff_stack
from tools.stack_files import stack_config

REPO = Path(__file__).resolve().parent.parent


def stack_diff_markdown(
    repo: Path, stack: str, base_ref: str, venv: Path, with_engine: bool = True
) -> tuple[str, str, int]:
    """The Markdown for the comment, the whole diff, and the exit code `main` returns."""
    try:
        base, head = render_base_and_head(repo, base_ref, stack, venv)
    except RenderError as error:
        body = str(error).replace("```", "'''")
        text = f"### Stack `{stack}`: ❌ no diff\n\n```\n{body}\n```\n"
        return text, text, 2
    diff = diff_stack(stack, base.render, head.render, load_rules(), surge=_surge(repo, stack))
    code = 1 if diff.head_mandatory else 0
    engine = engine_section(repo, base_ref, stack, base.render, head.render) if with_engine else ""
    return (
        render_markdown(diff, base.label, head.label) + engine,
        render_markdown(diff, base.label, head.label, max_chars=None) + engine,
        code,
    )


def _surge(repo: Path, stack: str) -> bool:
    """The working tree's `dynamo.targetSwap` is `surge`."""
    config, _ = stack_config(stack, repo)
    dynamo = json.loads(next((v for k, v in config.items() if k.split(":")[-1] == "dynamo"), "{}"))
    return isinstance(dynamo, dict) and dynamo.get("targetSwap") == "surge"


def engine_section(repo: Path, base_ref: str, stack: str, base: Render, head: Render) -> str:
    """Which engine produced the diff: the real one where the built providers can preview the stack
    (tools/e2e/engine_diff.py), else the offline model above, saying why."""
    base_records = [r.record for r in base.resources.values()]
    head_records = [r.record for r in head.resources.values()]
    why_not = not_previewable(base_records + head_records)
    if why_not:
        return f"\n#### ⚙️ Engine\n\nThe diff above is the offline model's: the real engine cannot preview this stack here: {why_not}.\n"
    label, text = engine_preview(repo, base_ref, stack, base_records, head_records)
    fence = "````"
    return f"\n#### ⚙️ Engine preview\n\nProduced by {label}:\n\n{fence}\n{text.strip()}\n{fence}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.diff", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="stack name (Pulumi.<stack>.yaml)")
    parser.add_argument("--base", required=True, help="git ref to compare against, e.g. origin/main or HEAD~1")
    parser.add_argument("--repo", type=Path, default=REPO, help="the repository (default: this one)")
    parser.add_argument("--venv", type=Path, default=Path(sys.prefix), help="virtualenv both renders use")
    parser.add_argument("--offline", action="store_true", help="the offline model only, no engine preview")
    parser.add_argument(
        "--out", type=Path, help="also write the Markdown to this file, and the whole diff to full/<name> beside it"
    )
    args = parser.parse_args(argv)
    markdown, whole, code = stack_diff_markdown(
        args.repo.resolve(), args.stack, args.base, args.venv.resolve(), with_engine=not args.offline
    )
    if args.out:
        (args.out.parent / "full").mkdir(parents=True, exist_ok=True)
        args.out.write_text(markdown)
        (args.out.parent / "full" / args.out.name).write_text(whole)
    sys.stdout.write(markdown)
    return code


if __name__ == "__main__":
    sys.exit(main())
