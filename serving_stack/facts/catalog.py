"""The serving-target catalog: `catalog/targets.yaml` plus the upstream recipe manifests it names.

Everything a target is (components, GPUs, images, draft checkpoints) is read from its manifest, so a
new upstream revision is absorbed by replacing `catalog/recipes/` and editing `targets.yaml`.
"""
from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml

from serving_stack.errors import ConfigError
from serving_stack.facts.data import DATA_DIR, Data, load_model, read_documents
from serving_stack.names import GPU_PRODUCT_LABEL, GPU_RESOURCE, WORKER_COMPONENT_TYPES

CATALOG_DIR = DATA_DIR
WORKER_TYPES = WORKER_COMPONENT_TYPES


class Performance(Data):
    concurrency: int = pydantic.Field(gt=0)
    ttftP50Ms: float = pydantic.Field(gt=0)
    outputTokensPerSecondPerGpu: float = pydantic.Field(gt=0)
    tokensPerSecondPerUser: float = pydantic.Field(gt=0)


class Criteria(Data):
    minTokensPerSecondPerUser: float
    maxTtftP50Ms: float

    def passed_by(self, performance: Performance) -> bool:
        return (
            performance.tokensPerSecondPerUser >= self.minTokensPerSecondPerUser
            and performance.ttftP50Ms < self.maxTtftP50Ms
        )


class TargetEntry(Data):
    id: str = pydantic.Field(pattern=r"^[a-z0-9-]+/[a-z0-9-]+$")
    manifest: str
    speculativeDecoding: Literal["MTP", "DFlash", "DSpark", "none"]
    routing: Literal["single", "kv", "1P1D"]
    performance: Performance


class Upstream(Data):
    repository: str
    path: str
    commit: str
    date: str


class ModelCacheManifests(Data):
    manifest: str
    downloadJob: str


class Benchmark(Data):
    workload: str
    source: str


class CatalogFile(Data):
    schemaVersion: Literal[1]
    upstream: Upstream
    modelCache: ModelCacheManifests
    benchmark: Benchmark
    criteria: Criteria
    targets: list[TargetEntry] = pydantic.Field(min_length=1)


class Recipe:
    """One target's upstream ConfigMap + DynamoGraphDeployment, with what the stack derives from them."""

    def __init__(self, entry: TargetEntry, config_map: dict[str, Any], dgd: dict[str, Any]) -> None:
        self.entry = entry
        self.config_map = config_map
        self.dgd = dgd

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def name(self) -> str:
        return str(self.dgd["metadata"]["name"])

    @property
    def backend(self) -> str:
        return str(self.dgd["spec"]["backendFramework"])

    @property
    def components(self) -> list[dict[str, Any]]:
        components: list[dict[str, Any]] = self.dgd["spec"]["components"]
        return components

    @property
    def component_names(self) -> list[str]:
        return [c["name"] for c in self.components]

    @property
    def disaggregated(self) -> bool:
        return any(c["type"] in ("prefill", "decode") for c in self.components)

    def worker_components(self) -> list[dict[str, Any]]:
        return [c for c in self.components if c["type"] in WORKER_TYPES]

    @staticmethod
    def gpus_per_replica(component: dict[str, Any]) -> int:
        containers = component.get("podTemplate", {}).get("spec", {}).get("containers", [])
        return sum(int(c.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0)) for c in containers)

    @property
    def gpu_products(self) -> list[str]:
        """GPU product labels the workers are pinned to (node affinity on `nvidia.com/gpu.product`)."""
        products: list[str] = []
        for component in self.worker_components():
            affinity = component["podTemplate"]["spec"].get("affinity", {}).get("nodeAffinity", {})
            terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
            for term in terms:
                for expression in term.get("matchExpressions", []):
                    if expression["key"] == GPU_PRODUCT_LABEL:
                        products += [v for v in expression["values"] if v not in products]
        return products

    @property
    def checkpoints(self) -> list[str]:
        """Hugging Face repos the workers load: the served model plus any speculative draft model."""
        repos: list[str] = []
        for component in self.worker_components():
            args = component["podTemplate"]["spec"]["containers"][0].get("args", [])
            if "--model" in args:
                repos.append(args[args.index("--model") + 1])
        for key, text in self.config_map.get("data", {}).items():
            if key == "speculative-config":
                draft = json.loads(text).get("model")  # MTP drafts with the base model's own heads
                repos += [draft] if draft else []
            elif key.endswith(".yaml"):
                speculative = (yaml.safe_load(text) or {}).get("speculative_config") or {}
                if "speculative_model" in speculative:
                    repos.append(speculative["speculative_model"])
        return list(dict.fromkeys(repos))

    @property
    def served_model_name(self) -> str:
        for component in self.worker_components():
            args = component["podTemplate"]["spec"]["containers"][0].get("args", [])
            if "--served-model-name" in args:
                return str(args[args.index("--served-model-name") + 1])
        raise ValueError(f"{self.id}: no --served-model-name in any worker")

    def copy_manifests(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return copy.deepcopy(self.config_map), copy.deepcopy(self.dgd)


class Catalog:
    def __init__(self, data: CatalogFile, recipes: dict[str, Recipe], model_cache_pvc: dict[str, Any],
                 download_job: dict[str, Any]) -> None:
        self.data = data
        self.recipes = recipes
        self.model_cache_pvc = model_cache_pvc
        self.download_job = download_job

    @property
    def criteria(self) -> Criteria:
        return self.data.criteria

    def recipe(self, target_id: str) -> Recipe:
        return self.recipes[target_id]


def _recipe_from(entry: TargetEntry, index: int, root: Path) -> Recipe:
    key = f"catalog/targets.yaml: targets[{index}].manifest"
    documents = read_documents(root / entry.manifest, key)
    kinds = sorted(doc.get("kind", "") for doc in documents)
    if kinds != ["ConfigMap", "DynamoGraphDeployment"]:
        raise ConfigError(key, f"{entry.manifest} holds {kinds}", "exactly one ConfigMap and one DynamoGraphDeployment")
    config_map = next(d for d in documents if d["kind"] == "ConfigMap")
    dgd = next(d for d in documents if d["kind"] == "DynamoGraphDeployment")
    recipe = Recipe(entry, config_map, dgd)
    if not recipe.worker_components():
        raise ConfigError(key, f"{entry.manifest} has no worker component", ", ".join(WORKER_TYPES))
    if not recipe.gpu_products:
        raise ConfigError(key, f"{entry.manifest} pins no worker to a {GPU_PRODUCT_LABEL}")
    return recipe


@functools.lru_cache(maxsize=4)
def load_catalog(root: Path = CATALOG_DIR) -> Catalog:
    """Parse and check the catalog data; bad data stops the program with the file and key named."""
    data = load_model(root / "targets.yaml", CatalogFile, root)
    recipes: dict[str, Recipe] = {}
    for index, entry in enumerate(data.targets):
        if entry.id in recipes:
            raise ConfigError(f"catalog/targets.yaml: targets[{index}].id", f"duplicate target id {entry.id!r}")
        recipes[entry.id] = _recipe_from(entry, index, root)
    names = [r.name for r in recipes.values()]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError("catalog/targets.yaml: targets", f"two manifests share the DGD name(s) {duplicates}")
    (pvc,) = read_documents(root / data.modelCache.manifest, "catalog/targets.yaml: modelCache.manifest")
    (job,) = read_documents(root / data.modelCache.downloadJob, "catalog/targets.yaml: modelCache.downloadJob")
    return Catalog(data, recipes, pvc, job)


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
