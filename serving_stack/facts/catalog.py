"""The serving-target catalog: `catalog/targets.yaml` plus the upstream manifests it names.

Everything a target is (components, GPUs, images, checkpoints) is read from its manifest, and the model
cache (claim size, download Jobs, checkpoint env names) from upstream's model-cache manifests. A new
upstream revision is absorbed as data with `make absorb` (`tools/absorb`), which writes `recipes/`
and this file; published figures are optional per target.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

import pydantic

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.data import DATA_DIR, Data, check_shape, data_file, data_label, load_model, read_documents
from serving_stack.facts.manifest_shapes import ConfigMapShape, DynamoGraphDeploymentShape
from serving_stack.facts.model_cache import ModelCacheFacts, load_model_cache
from serving_stack.facts.recipe import Performance, Recipe, TargetEntry
from serving_stack.facts.strict_files import parse_json, parse_yaml
from serving_stack.names import GPU_PRODUCT_LABEL, WORKER_COMPONENT_TYPES

__all__ = [
    "CATALOG_DIR",
    "Catalog",
    "Criteria",
    "Performance",
    "Recipe",
    "RetiredTarget",
    "TargetEntry",
    "load_catalog",
    "load_platform",
]

CATALOG_DIR = DATA_DIR
TARGETS_FILE = "targets.yaml"


class Criteria(Data):
    minTokensPerSecondPerUser: float
    maxTtftP50Ms: float

    def passed_by(self, performance: Performance) -> Optional[bool]:
        """True or False where the published figures decide it; None (unknown) where a figure the verdict
        needs is unpublished: a known failure still fails, an unknown never passes."""
        checks = [
            None
            if performance.tokensPerSecondPerUser is None
            else performance.tokensPerSecondPerUser >= self.minTokensPerSecondPerUser,
            None if performance.ttftP50Ms is None else performance.ttftP50Ms < self.maxTtftP50Ms,
        ]
        if False in checks:
            return False
        return None if None in checks else True


class Upstream(Data):
    repository: str
    path: str
    commit: str = pydantic.Field(pattern=r"^[0-9a-f]{7,40}$")
    date: str = pydantic.Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class ModelCacheManifests(Data):
    claim: str
    downloadJobs: list[str] = pydantic.Field(min_length=1)


class Benchmark(Data):
    workload: str
    source: str


class Retirement(Data):
    """When upstream dropped a target: the absorbed revision that removed or renamed it, the revision its
    kept manifest comes from, and the id that replaced it (a rename's new id; none for a removal)."""

    commit: str = pydantic.Field(pattern=r"^[0-9a-f]{7,40}$")
    date: str = pydantic.Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    lastCommit: str = pydantic.Field(pattern=r"^[0-9a-f]{7,40}$")
    successor: Optional[str] = None
    closest: Optional[str] = None  # a removal's most alike target of the revision that removed it


class RetiredEntry(TargetEntry):
    """A target upstream no longer has, kept selectable from its last revision's manifest
    (`retired/<lastCommit>/...`) so that absorbing a revision never breaks a stack that selects it."""

    retired: Retirement


class CatalogFile(Data):
    schemaVersion: Literal[2]
    upstream: Upstream
    modelCache: ModelCacheManifests
    benchmark: Benchmark
    criteria: Criteria
    targets: list[TargetEntry] = pydantic.Field(min_length=1)
    retired: list[RetiredEntry] = pydantic.Field(default_factory=list)


@dataclass(frozen=True)
class RetiredTarget:
    recipe: Recipe
    retirement: Retirement

    @property
    def replacement(self) -> Optional[str]:
        return self.retirement.successor or self.retirement.closest

    def warning(self, where: str) -> str:
        """One line for summary.md, stderr and the PR diff: what is retired and what to select instead."""
        r = self.retirement
        change = f"renamed it to {r.successor}" if r.successor else "removed it"
        instead = (
            f"select its successor {r.successor}"
            if r.successor
            else f"upstream names no successor; the closest target is {r.closest}"
            if r.closest
            else "upstream names no successor"
        )
        return (
            f"{where}: {self.recipe.id} is retired: upstream {change} at {r.commit} ({r.date}); it renders "
            f"from its last revision {r.lastCommit} (catalog/{self.recipe.entry.manifest}); {instead}"
        )


class Catalog:
    """`recipes` are the targets of the absorbed revision; `retired` the ones earlier revisions had, still
    selectable by a stack (each with a warning naming what replaced it)."""

    def __init__(
        self,
        data: CatalogFile,
        recipes: dict[str, Recipe],
        model_cache: ModelCacheFacts,
        retired: Mapping[str, RetiredTarget] | None = None,
    ):
        self.data = data
        self.recipes = recipes
        self.model_cache = model_cache
        self.retired: Mapping[str, RetiredTarget] = retired or {}

    @property
    def criteria(self) -> Criteria:
        return self.data.criteria

    @property
    def selectable(self) -> list[str]:
        """Every id a stack may select: the current targets, then the retired ones."""
        return [*self.recipes, *self.retired]

    def recipe(self, target_id: str) -> Recipe:
        retired = self.retired.get(target_id)
        return retired.recipe if retired else self.recipes[target_id]


def _recipe_from(entry: TargetEntry, index: int, root: Path, section: str = "targets") -> Recipe:
    key = f"catalog/{TARGETS_FILE}: {section}[{index}]"
    path = data_file(root, entry.manifest, f"{key}.manifest")
    name = data_label(path, root.resolve())
    documents = read_documents(path, f"{key}.manifest", root.resolve())
    kinds = sorted(str(doc.get("kind", "")) for doc in documents)
    if kinds != ["ConfigMap", "DynamoGraphDeployment"]:
        raise ConfigError(
            f"{key}.manifest", f"{entry.manifest} holds {kinds}", "exactly one ConfigMap and one DynamoGraphDeployment"
        )
    config_map = next(d for d in documents if d["kind"] == "ConfigMap")
    dgd = next(d for d in documents if d["kind"] == "DynamoGraphDeployment")
    check_shape(config_map, ConfigMapShape, f"{key}.manifest: {name} ConfigMap: ")
    check_shape(dgd, DynamoGraphDeploymentShape, f"{key}.manifest: {name} DynamoGraphDeployment: ")
    for data_key, text in config_map.get("data", {}).items():  # what `speculative_configs` parses, checked
        where = f"{key}.manifest: {name} ConfigMap: data.{data_key}"
        if data_key == "speculative-config" and not isinstance(parse_json(text, where, where), dict):
            raise ConfigError(where, "is not a JSON object")
        if data_key.endswith(".yaml"):
            engine = parse_yaml(text, where, where)
            if len(engine) != 1 or not isinstance(engine[0] or {}, dict):
                raise ConfigError(where, "is not one YAML mapping")
            if not isinstance((engine[0] or {}).get("speculative_config") or {}, dict):
                raise ConfigError(f"{where}: speculative_config", "is not a mapping")
    recipe = Recipe(entry, config_map, dgd)
    if not recipe.worker_components():
        raise ConfigError(
            f"{key}.manifest", f"{entry.manifest} has no worker component", ", ".join(WORKER_COMPONENT_TYPES)
        )
    if not recipe.gpu_products:
        raise ConfigError(f"{key}.manifest", f"{entry.manifest} pins no worker to a {GPU_PRODUCT_LABEL}")
    try:
        derived_fields = (("speculativeDecoding", recipe.speculative_decoding), ("routing", recipe.routing))
        recipe.served_model_name  # noqa: B018  # read by the plan: checked here, while the manifest is named
        recipe.checkpoints  # noqa: B018
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
        raise ConfigError(
            f"{key}.manifest", f"{name} cannot be read: {bounded(str(error) or type(error).__name__, quote=False)}"
        ) from None
    for field, derived in derived_fields:
        if getattr(entry, field) != derived:
            raise ConfigError(
                f"{key}.{field}", f"{getattr(entry, field)!r}, but the manifest says {derived!r}", derived
            )
    return recipe


@functools.lru_cache(maxsize=4)
def load_catalog(root: Path = CATALOG_DIR) -> Catalog:
    """Parse and check the catalog data; bad data stops the program with the file and key named."""
    data = load_model(root / TARGETS_FILE, CatalogFile, root)
    recipes: dict[str, Recipe] = {}
    for index, entry in enumerate(data.targets):
        if entry.id in recipes:
            raise ConfigError(f"catalog/{TARGETS_FILE}: targets[{index}].id", f"duplicate target id {entry.id!r}")
        recipes[entry.id] = _recipe_from(entry, index, root)
    retired: dict[str, RetiredTarget] = {}
    for index, old in enumerate(data.retired):
        key = f"catalog/{TARGETS_FILE}: retired[{index}]"
        if old.id in recipes or old.id in retired:
            raise ConfigError(f"{key}.id", f"{old.id!r} is also a current or another retired target")
        retired[old.id] = RetiredTarget(_recipe_from(old, index, root, "retired"), old.retired)
    for index, old in enumerate(data.retired):
        for field in ("successor", "closest"):
            named = getattr(old.retired, field)
            if named is not None and named not in recipes and named not in retired:
                raise ConfigError(
                    f"catalog/{TARGETS_FILE}: retired[{index}].retired.{field}", f"{named!r} is not in the catalog"
                )
    names = [r.name for r in recipes.values()]  # a retired target may share one: a stack selects one of them
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"catalog/{TARGETS_FILE}: targets", f"two manifests share the DGD name(s) {duplicates}")
    model_cache = load_model_cache(root, data.modelCache.claim, data.modelCache.downloadJobs)
    return Catalog(data, recipes, model_cache, retired)


class Chart(Data):
    name: str
    version: str
    url: str
    minKubernetes: str


class Readiness(Data):
    """How long `pulumi up` may wait for a DGD beyond its workers' own startupProbe budget."""

    imagePullAllowanceSeconds: int = pydantic.Field(gt=0)
    source: str


class PlatformFile(Data):
    chart: Chart
    values: dict[str, Any]
    readiness: Readiness


@functools.lru_cache(maxsize=4)
def load_platform(root: Path = CATALOG_DIR) -> PlatformFile:
    """The pinned Dynamo platform chart and the values the stack always sets."""
    return load_model(root / "platform.yaml", PlatformFile, root)
