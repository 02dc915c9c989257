"""A synthetic next upstream revision, built from the vendored one in a git repository laid out as upstream.

It holds every kind of change a real revision brings: a target renamed (with a tweak), one removed, one
for a GPU no data file knows and without published figures, a BF16 checkpoint set with its own download
Job and env names plus a target that loads it (with a table row), a changed figure, and a new claim size.
Which targets are renamed or removed is chosen from the catalog (never one a committed stack selects),
so the builder holds for whatever revision is vendored.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from serving_stack.facts.aws import load_gpus
from serving_stack.facts.catalog import CATALOG_DIR, Catalog, Recipe
from tools.absorb.changes import read_stacks
from tools.mock_runtime import PROJECT_DIR

UPSTREAM_PATH = "recipes/nemotron-3.5-lightning"
COMMIT_DATE = "2026-09-15"
NEW_GPU_LABEL = "NVIDIA-B300"
BF16_REPO = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16"
BF16_ENV = "BF16_MODEL"
BF16_JOB = "model-download-bf16"
BF16_ROW = {
    "concurrency": 12,
    "ttftP50Ms": 301.5,
    "outputTokensPerSecondPerGpu": 1102.25,
    "tokensPerSecondPerUser": 91.85,
    "syntheticAcceptanceLength": 3.687,
}


@dataclass(frozen=True)
class SyntheticRevision:
    directory: Path  # the recipe directory, inside a git checkout
    commit: str
    renamed: tuple[str, str]
    removed: str
    new_gpu_target: str
    bf16_target: str
    changed: str  # a kept target whose TTFT p50 figure changed
    claim_size: str


def _unselected(catalog: Catalog) -> list[Recipe]:
    selected = {s.target_id for s in read_stacks(PROJECT_DIR).selections}
    return [r for r in sorted(catalog.recipes.values(), key=lambda r: r.id) if r.id not in selected]


def _copy_target(
    directory: Path, source: Recipe, new_id: str, replace: dict[str, str], patterns: tuple[tuple[str, str], ...] = ()
) -> None:
    """`source`'s manifest under `new_id`, its names following the id (`vllm/x` -> `vllm-x`), edited."""
    text = (CATALOG_DIR / source.entry.manifest).read_text()
    for old, new in {source.name: new_id.replace("/", "-"), **replace}.items():
        text = text.replace(old, new)
    for pattern, replacement in patterns:
        text, count = re.subn(pattern, replacement, text)
        assert count, f"{source.id}: no {pattern!r} to edit"
    (directory / new_id).mkdir(parents=True)
    (directory / new_id / "deploy.yaml").write_text(text)


def _table_row(target_id: str, figures: dict[str, float]) -> str:
    cells = [
        f"`{target_id}/deploy.yaml`",
        "vLLM",
        "agg",
        "H200",
        "Single worker",
        "MTP",
        "7",
        str(figures["syntheticAcceptanceLength"]),
        str(figures["concurrency"]),
        "500",
        "499",
        "1",
        str(figures["ttftP50Ms"]),
        str(figures["outputTokensPerSecondPerGpu"]),
        str(figures["tokensPerSecondPerUser"]),
    ]
    return "| " + " | ".join(cells) + " |"


def _rewrite_table(directory: Path, renamed: tuple[str, str], removed: str, changed: str, bf16: str) -> None:
    readme = directory / "perf" / "README.md"
    lines = []
    for line in readme.read_text().splitlines():
        if f"`{removed}/deploy.yaml`" in line:
            continue
        line = line.replace(f"`{renamed[0]}/deploy.yaml`", f"`{renamed[1]}/deploy.yaml`")
        if f"`{changed}/deploy.yaml`" in line:
            cells = line.split("|")
            cells[13] = f" {float(cells[13]) * 1.1:.2f} "  # TTFT p50 (ms), 10% slower
            line = "|".join(cells)
        lines.append(line)
    last_row = max(i for i, line in enumerate(lines) if line.startswith("| `"))
    lines.insert(last_row + 1, _table_row(bf16, BF16_ROW))
    readme.write_text("\n".join(lines) + "\n")


def _bf16_job(primary: Path) -> None:
    """A second download Job beside `primary` (a file of the synthetic revision) for the BF16 set."""
    job = yaml.safe_load(primary.read_text())
    job["metadata"]["name"] = BF16_JOB
    job["spec"]["template"]["metadata"]["labels"]["app"] = BF16_JOB
    (container,) = job["spec"]["template"]["spec"]["containers"]
    upstream_names = [
        e["name"] for e in container["env"] if "/" in str(e.get("value", "")) and not e["value"].startswith("/")
    ]
    container["env"] = [{"name": BF16_ENV, "value": BF16_REPO}] + [
        e for e in container["env"] if e["name"] not in upstream_names
    ]
    loop = re.compile(r"\(\s*" + r"\s*,\s*".join(f'"{n}"' for n in upstream_names) + r"\s*,?\s*\)")
    container["args"] = [loop.sub(f'("{BF16_ENV}",)', a) for a in container["args"]]
    (primary.parent / f"{BF16_JOB}.yaml").write_text(yaml.safe_dump(job, sort_keys=False))


def build(root: Path, catalog: Catalog) -> SyntheticRevision:
    directory = root / UPSTREAM_PATH
    shutil.copytree(CATALOG_DIR / "recipes", directory)
    candidates = _unselected(catalog)
    removed = next(r for r in reversed(candidates) if r.routing == "kv")
    renamed_from = next(r for r in reversed(candidates) if r.disaggregated and r.id != removed.id)
    renamed = (renamed_from.id, f"{renamed_from.id}-v2")
    shutil.rmtree(directory / removed.id)
    _copy_target(directory, renamed_from, renamed[1], {}, ((r"(- --max-num-seqs\n\s*- )'(\d+)'", r"\g<1>'48'"),))
    shutil.rmtree(directory / renamed[0])
    known_gpu = next(
        r
        for r in candidates
        if not r.disaggregated
        and r.backend == "vllm"
        and r.routing == "single"
        and "nodeSelector" not in r.components[0]["podTemplate"]["spec"]
    )
    old_label = known_gpu.gpu_products[0]
    gpu = next(name for name, g in load_gpus().items() if old_label in g.product_labels)
    new_gpu_target = known_gpu.id.replace(gpu, "b300")
    _copy_target(directory, known_gpu, new_gpu_target, {old_label: NEW_GPU_LABEL})
    base_model = catalog.model_cache.jobs[0].repos[0]
    mtp = next(r for r in candidates if not r.disaggregated and r.backend == "vllm" and r.speculative_decoding == "MTP")
    bf16_target = f"{mtp.id}-bf16"
    _copy_target(
        directory, mtp, bf16_target, {base_model: BF16_REPO}, ((r"\n\s*- --quantization\n\s*- modelopt_fp4", ""),)
    )
    _bf16_job(directory / Path(catalog.model_cache.jobs[0].path).relative_to("recipes"))
    changed = next(r.id for r in candidates if r.id not in (removed.id, renamed[0]) and r.entry.performance.published)
    _rewrite_table(directory, renamed, removed.id, changed, bf16_target)
    claim_path = directory / Path(catalog.data.modelCache.claim).relative_to("recipes")
    size = catalog.model_cache.size
    claim_size = f"{int(size.removesuffix('Gi')) * 2}Gi"
    claim_path.write_text(claim_path.read_text().replace(f"storage: {size}", f"storage: {claim_size}"))
    return SyntheticRevision(
        directory, _commit(root), renamed, removed.id, new_gpu_target, bf16_target, changed, claim_size
    )


@dataclass(frozen=True)
class ReplacingRevision:
    """A revision that replaces targets a committed stack selects with their BF16 variants (renames)."""

    directory: Path
    commit: str
    renamed: dict[str, str]  # old id -> BF16 successor


def build_replacing(root: Path, catalog: Catalog, stack_file: str, count: int = 2) -> ReplacingRevision:
    """Up to `count` current vLLM targets `stack_file` selects whose manifest loads the base checkpoint
    (aggregated ones first), each renamed to a BF16 variant (the base checkpoint swapped for the BF16 set,
    fetched by its own download Job; the FP4 quantization flag dropped), with their table rows following."""
    directory = root / UPSTREAM_PATH
    shutil.copytree(CATALOG_DIR / "recipes", directory)
    base_model = catalog.model_cache.jobs[0].repos[0]
    base_pattern = re.escape(base_model) + r"(?![\w-])"
    selected = [
        catalog.recipes[s.target_id]
        for s in read_stacks(PROJECT_DIR).selections
        if s.stack_file == stack_file and s.target_id in catalog.recipes
    ]
    loading_base = [
        r
        for r in selected
        if r.backend == "vllm" and re.search(base_pattern, (CATALOG_DIR / r.entry.manifest).read_text())
    ]
    replaced = sorted(loading_base, key=lambda r: r.disaggregated)[:count]  # aggregated ones first
    assert replaced, f"{stack_file} selects no current vLLM target loading {base_model}"
    renamed = {}
    for recipe in replaced:
        new_id = f"{recipe.id}-bf16"
        _copy_target(
            directory,
            recipe,
            new_id,
            {},
            (
                (base_pattern, BF16_REPO),
                (r"\n\s*- --quantization\n\s*- modelopt_fp4", ""),
            ),
        )
        shutil.rmtree(directory / recipe.id)
        renamed[recipe.id] = new_id
    _bf16_job(directory / Path(catalog.model_cache.jobs[0].path).relative_to("recipes"))
    readme = directory / "perf" / "README.md"
    text = readme.read_text()
    for old, new in renamed.items():
        text = text.replace(f"`{old}/deploy.yaml`", f"`{new}/deploy.yaml`")
    readme.write_text(text)
    return ReplacingRevision(directory, _commit(root), renamed)


def _commit(root: Path) -> str:
    env = {
        "GIT_AUTHOR_DATE": f"{COMMIT_DATE}T12:00:00Z",
        "GIT_COMMITTER_DATE": f"{COMMIT_DATE}T12:00:00Z",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": "/usr/bin:/bin",
    }
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=upstream", "-c", "user.email=upstream@example.com", "commit", "-qm", "recipes"],
    ):
        subprocess.run(["git", "-C", str(root), *command], check=True, env=env, timeout=60)
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
        check=True,
        env=env,
        timeout=60,
        capture_output=True,
        text=True,
    ).stdout.strip()
