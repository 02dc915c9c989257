"""One upstream recipe directory (`recipes/nemotron-3.5-lightning` at some commit), read as data.

Targets are the manifests holding a DynamoGraphDeployment (id: the manifest's directory, e.g.
`vllm/agg-b200-dflash`); the model cache is the one PersistentVolumeClaim and every Job beside them.
What is vendored: every regular file whose suffix is listed (manifests, Markdown, scripts), byte for
byte; symlinks and other files (an LFS trace, say) are named in the report and left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from tools.absorb.perf_table import Row, published_criteria, published_figures

VENDORED_SUFFIXES = (".yaml", ".yml", ".md", ".sh")
MANIFEST_SUFFIXES = (".yaml", ".yml")


class UpstreamError(ValueError):
    """The directory is not a recipe revision this catalog can hold."""


@dataclass(frozen=True)
class UpstreamTarget:
    id: str
    manifest: str  # below the upstream directory
    config_map: dict[str, Any]
    dgd: dict[str, Any]


@dataclass(frozen=True)
class UpstreamRevision:
    root: Path
    files: tuple[str, ...]
    skipped: tuple[str, ...]
    targets: dict[str, UpstreamTarget]
    claim: str
    download_jobs: tuple[str, ...]
    figures: dict[str, Row]
    criteria: dict[str, float]


def target_id_of(manifest: str) -> str:
    """`vllm/agg-b200-dflash/deploy.yaml` -> `vllm/agg-b200-dflash`; another file name keeps its stem."""
    path = PurePosixPath(manifest)
    return str(path.parent) if path.stem == "deploy" else str(path.with_suffix(""))


def _documents(path: Path, label: str) -> list[dict[str, Any]]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if d]
    except yaml.YAMLError as error:
        raise UpstreamError(f"{label}: not valid YAML ({str(error).splitlines()[0]})") from None


def _target(label: str, documents: list[dict[str, Any]]) -> UpstreamTarget:
    kinds = sorted(str(d.get("kind")) for d in documents)
    if kinds != ["ConfigMap", "DynamoGraphDeployment"]:
        raise UpstreamError(
            f"{label}: holds {kinds}; a target manifest holds one ConfigMap and one DynamoGraphDeployment"
        )
    by_kind = {d["kind"]: d for d in documents}
    return UpstreamTarget(target_id_of(label), label, by_kind["ConfigMap"], by_kind["DynamoGraphDeployment"])


def read_upstream(root: Path) -> UpstreamRevision:
    if not root.is_dir():
        raise UpstreamError(f"{root} is not a directory")
    files: list[str] = []
    skipped: list[str] = []
    for path in sorted(p for p in root.rglob("*") if not p.is_dir()):
        relative = path.relative_to(root).as_posix()
        vendored = path.suffix in VENDORED_SUFFIXES and not path.is_symlink() and path.is_file()
        (files if vendored else skipped).append(relative)
    targets: dict[str, UpstreamTarget] = {}
    claims: list[str] = []
    jobs: list[str] = []
    for relative in (f for f in files if PurePosixPath(f).suffix in MANIFEST_SUFFIXES):
        documents = _documents(root / relative, relative)
        kinds = {str(d.get("kind")) for d in documents}
        if "DynamoGraphDeployment" in kinds:
            target = _target(relative, documents)
            if target.id in targets:
                raise UpstreamError(f"{relative}: target id {target.id} is also {targets[target.id].manifest}")
            targets[target.id] = target
        elif "PersistentVolumeClaim" in kinds:
            claims.append(relative)
        elif "Job" in kinds:
            jobs.append(relative)
    if len(claims) != 1:
        raise UpstreamError(
            f"the model cache needs exactly one PersistentVolumeClaim manifest, found {claims or 'none'}"
        )
    if not jobs:
        raise UpstreamError("no download Job manifest (a Job beside the claim)")
    if not targets:
        raise UpstreamError("no target manifest (a DynamoGraphDeployment)")
    figures = published_figures(root)
    return UpstreamRevision(
        root,
        tuple(files),
        tuple(skipped),
        dict(sorted(targets.items())),
        claims[0],
        tuple(jobs),
        figures,
        published_criteria(root),
    )
