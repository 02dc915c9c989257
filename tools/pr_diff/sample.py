"""The planted pull requests of the PR-diff tests, and the sample comment of docs/pull-requests.md made from one.

    python -m tools.pr_diff.sample        # make diff-sample

Each `plant_*` edits a stack's config (unprefixed keys, as in `Pulumi.<stack>.yaml`) the way a pull request
would, choosing what to change from the data (catalog targets, instance types, the stack's `demand:`), never
from literal ids:

- `plant_targets`: three catalog targets the stack does not serve, on the GPUs of its pools, the first of
  them one that fails the stack's demand SLO, and every pool grown by one node to hold them;
- `plant_root_volume`: one pool's root volume enlarged (a new launch-template version: every node rolls).

`main` copies this project into a temporary git repository, commits it, plants `plant_targets` and
`plant_root_volume` on prod as a second commit, runs the diff between the two (offline, as `make diff`
does) and writes its Markdown between the sample markers of docs/pull-requests.md (tests/test_pr_diff.py
fails when the committed sample differs). Dated facts are judged on `SAMPLE_TODAY`, so the sample changes
with the code and the data, not with the clock.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

from serving_stack.config.aws import NodePoolConfig
from serving_stack.facts.aws import AwsCatalog, load_aws_catalog
from serving_stack.facts.catalog import Catalog, Criteria, load_catalog
from serving_stack.facts.dates import TODAY_ENV
from tools.stack_files import project_name

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "pull-requests.md"
BEGIN = "<!-- sample: `make diff-sample` writes what follows, up to the closing marker -->"
END = "<!-- /sample -->"
SAMPLE_STACK = "prod"
SAMPLE_TODAY = "2026-06-01"
ROOT_VOLUME_STEP_GIB = 100
LABELS = ("base `main`", "head (the planted pull request)")
GIT_USER = ["-c", "user.name=pr-diff-sample", "-c", "user.email=pr-diff-sample@example.invalid"]


@dataclass(frozen=True)
class PlantedTargets:
    added: tuple[str, ...]  # the first fails the stack's demand SLO
    grown: dict[str, tuple[int, int]]  # pool -> desired size before, after


def plant_targets(config: dict[str, Any], catalog: Catalog, aws: AwsCatalog) -> PlantedTargets:
    """Three new targets on the pools' GPUs (one failing `demand.slo`, two meeting it), each pool one node
    larger."""
    pools = config["aws"]["nodePools"]
    gpus = {aws.instance_types[pool["instanceType"]].gpu for pool in pools}
    slo = Criteria.model_validate(config["demand"]["slo"])
    served = {target["id"] for target in config["targets"]}
    fitting = [
        recipe
        for target_id, recipe in catalog.recipes.items()
        if target_id not in served and recipe.gpu_products and aws.gpu_of_product(recipe.gpu_products[0]) in gpus
    ]
    failing = [r.id for r in fitting if slo.passed_by(r.entry.performance) is False][:1]
    meeting = [r.id for r in fitting if slo.passed_by(r.entry.performance)][:2]
    if len(failing) + len(meeting) < 3:
        raise ValueError("the catalog has no three new targets (one failing the demand SLO) on the pools' GPUs")
    added = (*failing, *meeting)
    config["targets"] += [{"id": target_id} for target_id in added]
    grown = {}
    for pool in pools:
        grown[pool["name"]] = (pool["desiredSize"], pool["desiredSize"] + 1)
        pool["desiredSize"] += 1
        pool["maxSize"] = max(pool["maxSize"], pool["desiredSize"])
    return PlantedTargets(added, grown)


def plant_root_volume(config: dict[str, Any], default_gib: int) -> str:
    """The first pool's root volume `ROOT_VOLUME_STEP_GIB` larger; returns the pool's name."""
    pool = config["aws"]["nodePools"][0]
    pool["rootVolumeGiB"] = pool.get("rootVolumeGiB", default_gib) + ROOT_VOLUME_STEP_GIB
    return str(pool["name"])


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *GIT_USER, *args], check=True, capture_output=True, text=True).stdout


def copy_project(source: Path, destination: Path) -> Path:
    """The project's files (tracked and new, not ignored) in a fresh repository with one commit."""
    for name in filter(None, _git(source, "ls-files", "-co", "--exclude-standard", "-z").split("\0")):
        if (source / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, destination / name)
    _git(destination, "init", "--quiet")
    _git(destination, "add", "--all")
    _git(destination, "commit", "--quiet", "-m", "base")
    return destination


def edit_stack(repo: Path, stack: str, edit: Any) -> Any:
    """Apply `edit(config)` to `Pulumi.<stack>.yaml` (unprefixed keys), write it back, return its result."""
    path = repo / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text())
    prefix = f"{project_name(repo)}:"
    config = {key.removeprefix(prefix): value for key, value in document["config"].items()}
    result = edit(config)
    document["config"] = {(key if ":" in key else prefix + key): value for key, value in config.items()}
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return result


def plant_sample(repo: Path) -> None:
    """The sample's pull request on prod, committed."""
    catalog, aws = load_catalog(), load_aws_catalog()
    default_gib = int(NodePoolConfig.model_fields["rootVolumeGiB"].default)

    def edit(config: dict[str, Any]) -> None:
        plant_targets(config, catalog, aws)
        plant_root_volume(config, default_gib)

    edit_stack(repo, SAMPLE_STACK, edit)
    _git(repo, "commit", "--quiet", "--all", "-m", "planted pull request")


def sample_markdown(venv: Path) -> str:
    """The comment `make diff` writes for the sample's pull request, in a throwaway clone."""
    from tools.diff import Links, stack_diff_markdown

    with tempfile.TemporaryDirectory(prefix="pr-diff-sample-") as scratch:
        repo = copy_project(REPO, Path(scratch))
        plant_sample(repo)
        with mock.patch.dict(os.environ, {TODAY_ENV: SAMPLE_TODAY}):  # both renders judge dates on that day
            result = stack_diff_markdown(
                repo, SAMPLE_STACK, "HEAD~1", venv, Links.of(SAMPLE_STACK, None, None), False, LABELS
            )
    if result.exit_code == 2:
        raise RuntimeError(f"the sample does not render:\n{result.markdown}")
    return result.markdown


def with_sample(doc: str, sample: str) -> str:
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    return f"{doc[:start]}\n\n{sample.strip()}\n\n{doc[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.pr_diff.sample", description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=Path(sys.prefix), help="the virtualenv both renders use")
    args = parser.parse_args(argv)
    DOC.write_text(with_sample(DOC.read_text(), sample_markdown(args.venv.resolve())))
    print(f"wrote the sample comment into {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
