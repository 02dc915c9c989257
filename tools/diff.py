"""What a pull request changes in a stack, as Markdown for the PR comment (`make diff`).

    python -m tools.diff --stack prod --base origin/main [--out build/pr-diff/prod.md] [--run-url URL]

Renders BASE and the working tree offline (`tools.pr_diff.render_ref`) and writes their diff as Markdown
(`tools.pr_diff.markdown`). Where the engine can preview the stack (`make tools`; no AWS resources or Helm
releases), its `pulumi preview --diff` is written to `engine/<stack>.txt` beside the Markdown and held
against the offline diff. `--out` also writes the whole diff to `full/<name>` beside it, which the bounded
Markdown links (`--run-url`: the CI run whose artifact holds both). Exit 0: diff printed; 1: the working
tree violates a mandatory policy (diff printed); 2: a tree does not render (message printed).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from serving_stack.facts.catalog import load_catalog
from tools.e2e.engine_diff import engine_preview, not_previewable
from tools.pr_diff.demand import stack_criteria
from tools.pr_diff.engine import EngineReport, disagreements
from tools.pr_diff.markdown import render_markdown
from tools.pr_diff.render_ref import RenderedTree, RenderError, render_base_and_head
from tools.pr_diff.stack_diff import StackDiff, diff_stack
from tools.rollout.rules import load_rules

REPO = Path(__file__).resolve().parent.parent
ARTIFACT = "pr-diff-{stack}"  # the artifact .github/workflows/pull-request.yml uploads build/pr-diff/ as
DEFAULT_OUT = Path("build/pr-diff")


@dataclass(frozen=True)
class Links:
    """Where the whole diff and the engine's output are, as the comment names them (Markdown)."""

    full_diff: str
    engine_output: str

    @classmethod
    def of(cls, stack: str, out: Optional[Path], run_url: Optional[str]) -> Links:
        name = out.name if out else f"{stack}.md"
        if run_url:
            where = f"in the artifact `{ARTIFACT.format(stack=stack)}` of [the workflow run]({run_url})"
            return cls(f"`full/{name}` {where}", f"`engine/{stack}.txt` {where}")
        directory = _shown(out.parent) if out else str(DEFAULT_OUT)
        return cls(f"`{directory}/full/{name}`", f"`{directory}/engine/{stack}.txt`")


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class StackDiffOutput:
    markdown: str  # bounded for the comment
    whole: str
    exit_code: int
    engine: Optional[EngineReport] = None


def stack_diff_markdown(
    repo: Path,
    stack: str,
    base_ref: str,
    venv: Path,
    links: Links,
    with_engine: bool = True,
    labels: Optional[tuple[str, str]] = None,
) -> StackDiffOutput:
    """`labels`: how the comment names base and head (default: the refs and commits)."""
    try:
        base, head = render_base_and_head(repo, base_ref, stack, venv)
    except RenderError as error:
        body = str(error).replace("```", "'''")
        text = f"### `{stack}`: ❌ no diff\n\n```\n{body}\n```\n"
        return StackDiffOutput(text, text, 2)
    catalog = load_catalog()
    diff = diff_stack(
        stack,
        base.render,
        head.render,
        load_rules(),
        surge=_surge(head),
        criteria=stack_criteria(head.config, catalog),
        base_criteria=stack_criteria(base.config, catalog),
    )
    engine = engine_report(repo, base_ref, stack, base, head, diff, links.engine_output) if with_engine else None
    base_label, head_label = labels or (base.label, head.label)
    return StackDiffOutput(
        render_markdown(diff, base_label, head_label, full_diff=links.full_diff, engine=engine),
        render_markdown(diff, base_label, head_label, max_bytes=None, full_diff=links.full_diff, engine=engine),
        1 if diff.head_mandatory else 0,
        engine,
    )


def _surge(head: RenderedTree) -> bool:
    """The working tree's `dynamo.targetSwap` is `surge`."""
    raw = next((v for k, v in head.config.items() if k.split(":")[-1] == "dynamo"), "{}")
    dynamo = json.loads(raw) if isinstance(raw, str) else {}
    return isinstance(dynamo, dict) and dynamo.get("targetSwap") == "surge"


def engine_report(
    repo: Path, base_ref: str, stack: str, base: RenderedTree, head: RenderedTree, diff: StackDiff, link: str
) -> Optional[EngineReport]:
    """The real engine's preview where it can run here (`tools.e2e.engine_diff.not_previewable`), held
    against the offline diff; None where it cannot."""
    base_records = [r.record for r in base.render.resources.values()]
    head_records = [r.record for r in head.render.resources.values()]
    if not_previewable(base_records + head_records):
        return None
    base_venv = base.venv if base.venv != head.venv else None
    preview = engine_preview(repo, base_ref, stack, base_records, head_records, base_venv)
    found = disagreements(diff, preview.plan) if preview.ran else ()
    return EngineReport(preview.label, preview.text, link, found, preview.ran)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.diff", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="stack name (Pulumi.<stack>.yaml)")
    parser.add_argument("--base", required=True, help="git ref to compare against, e.g. origin/main or HEAD~1")
    parser.add_argument("--repo", type=Path, default=REPO, help="the repository (default: this one)")
    parser.add_argument(
        "--venv",
        type=Path,
        default=Path(sys.prefix),
        help="the working tree's virtualenv (and the base's, when their render requirements agree)",
    )
    parser.add_argument("--offline", action="store_true", help="the offline model only, no engine preview")
    parser.add_argument(
        "--out", type=Path, help="also write the Markdown to this file, and the whole diff to full/<name> beside it"
    )
    parser.add_argument("--run-url", help="the CI run whose artifact holds --out's directory: the comment links it")
    args = parser.parse_args(argv)
    result = stack_diff_markdown(
        args.repo.resolve(),
        args.stack,
        args.base,
        args.venv.resolve(),
        Links.of(args.stack, args.out, args.run_url),
        with_engine=not args.offline,
    )
    if args.out:
        for directory in ("full", "engine"):
            (args.out.parent / directory).mkdir(parents=True, exist_ok=True)
        args.out.write_text(result.markdown)
        (args.out.parent / "full" / args.out.name).write_text(result.whole)
        if result.engine is not None:
            (args.out.parent / "engine" / f"{args.stack}.txt").write_text(result.engine.text)
    sys.stdout.write(result.markdown)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
