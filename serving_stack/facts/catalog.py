"""The serving-target catalog: `catalog/targets.yaml`, the upstream manifests it names (vendored verbatim by
`make absorb`), checkpoint sizes, the pinned downloader, the model-cache manifests and the Dynamo platform pin.

What a target *is* (components, GPUs, images, checkpoints, speculative decoding, routing) is read from its
manifest; the entry adds only what the manifest cannot say, the published performance (each figure may be
unknown). The shapes below check, when the catalog is loaded, that every field the facts and the plan read is
there with the type they read it as (fields nobody reads are left alone), so a malformed manifest stops with the
file and key named. A download Job is one checkpoint set: the repos it fetches under upstream's env names.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import pydantic

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.strict_files import (
    DATA_DIR,
    Data,
    check_shape,
    data_file,
    data_label,
    load_model,
    parse_json,
    parse_yaml,
    read_documents,
)
from serving_stack.names import GPU_PRODUCT_LABEL, GPU_RESOURCE, HF_REPO, WORKER_COMPONENT_TYPES

# Options whose value the facts read from a container's args (`--model <repo>`).
VALUED_OPTIONS = ("--model", "--served-model-name", "--router-mode")


class _Shape(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", allow_inf_nan=False)


class _Named(_Shape):
    name: str = pydantic.Field(min_length=1)


class _Resources(_Shape):
    limits: dict[str, Union[str, int]] = pydantic.Field(default_factory=dict)

    @pydantic.field_validator("limits")
    @classmethod
    def _gpu_count(cls, limits: dict[str, Union[str, int]]) -> dict[str, Union[str, int]]:
        value = limits.get(GPU_RESOURCE, 0)
        if not str(value).isdigit():
            raise ValueError(f"{GPU_RESOURCE} must be a whole number of GPUs")
        return limits


class _EnvVar(_Shape):
    name: str
    value: Optional[Any] = None


class _Container(_Shape):
    command: list[str] = pydantic.Field(default_factory=list)
    args: list[str] = pydantic.Field(default_factory=list)
    env: list[_EnvVar] = pydantic.Field(default_factory=list)
    resources: _Resources = pydantic.Field(default_factory=_Resources)

    @pydantic.field_validator("args")
    @classmethod
    def _valued_options(cls, args: list[str]) -> list[str]:
        for option in VALUED_OPTIONS:
            if option in args and args.index(option) == len(args) - 1:
                raise ValueError(f"{option} is the last argument: it needs a value")
        return args


class _Expression(_Shape):
    key: str
    values: list[str] = pydantic.Field(default_factory=list)


class _Term(_Shape):
    matchExpressions: list[_Expression] = pydantic.Field(default_factory=list)


class _Required(_Shape):
    nodeSelectorTerms: list[_Term] = pydantic.Field(default_factory=list)


class _NodeAffinity(_Shape):
    requiredDuringSchedulingIgnoredDuringExecution: _Required = pydantic.Field(default_factory=_Required)


class _Affinity(_Shape):
    nodeAffinity: _NodeAffinity = pydantic.Field(default_factory=_NodeAffinity)


class _PodSpec(_Shape):
    containers: list[_Container] = pydantic.Field(min_length=1)
    affinity: _Affinity = pydantic.Field(default_factory=_Affinity)


class _PodTemplate(_Shape):
    spec: _PodSpec


class _Component(_Named):
    type: str
    replicas: int = pydantic.Field(ge=0)
    podTemplate: _PodTemplate


class _DgdSpec(_Shape):
    backendFramework: str
    components: list[_Component] = pydantic.Field(min_length=1)

    @pydantic.field_validator("components")
    @classmethod
    def _unique_names(cls, components: list[_Component]) -> list[_Component]:
        names = [c.name for c in components]
        if len(set(names)) != len(names):
            raise ValueError(f"two components share a name: {sorted(names)}")
        return components


class DynamoGraphDeploymentShape(_Shape):
    metadata: _Named
    spec: _DgdSpec


class ConfigMapShape(_Shape):
    data: dict[str, str] = pydantic.Field(default_factory=dict)


class _Storage(_Shape):
    storage: str = pydantic.Field(pattern=r"^[0-9]+(\.[0-9]+)?([KMGTPE]i?|k)?$")  # a Kubernetes quantity


class _ClaimResources(_Shape):
    requests: _Storage


class _ClaimSpec(_Shape):
    resources: _ClaimResources


class PersistentVolumeClaimShape(_Shape):
    spec: _ClaimSpec


class _JobSpec(_Shape):
    template: _PodTemplate


class JobShape(_Shape):
    metadata: _Named
    spec: _JobSpec


UNKNOWN = "unknown"
# Upstream's speculative-decoding method names (vLLM `method`, TRT-LLM `decoding_type`) as the
# performance table spells them; a method not listed keeps upstream's spelling.
SPECULATIVE_METHODS = {"mtp": "MTP", "dflash": "DFlash", "dspark": "DSpark", "eagle": "Eagle", "eagle3": "Eagle3"}
NO_SPECULATION = "none"


def _unknown_as_none(value: Any) -> Any:
    return None if value == UNKNOWN else value


def _routing(value: str) -> str:
    if not re.fullmatch(r"single|kv|\d+P\d+D", value):
        raise ValueError("must be single, kv or <prefill>P<decode>D such as 1P1D")
    return value


PositiveInt = Annotated[Optional[Annotated[int, pydantic.Field(gt=0)]], pydantic.BeforeValidator(_unknown_as_none)]
PositiveFloat = Annotated[Optional[Annotated[float, pydantic.Field(gt=0)]], pydantic.BeforeValidator(_unknown_as_none)]


class Performance(Data):
    """One row of the published table; each figure a positive number or `unknown` (read as None).
    `syntheticAcceptanceLength`: the fixed acceptance length a speculative row was measured with (synthetic
    rejection sampling); None for a row without speculative decoding or where upstream does not say."""

    concurrency: PositiveInt
    ttftP50Ms: PositiveFloat
    outputTokensPerSecondPerGpu: PositiveFloat
    tokensPerSecondPerUser: PositiveFloat
    syntheticAcceptanceLength: PositiveFloat

    @property
    def published(self) -> bool:
        return any(v is not None for v in self.model_dump().values())


class TargetEntry(Data):
    id: str = pydantic.Field(pattern=r"^[a-z0-9-]+/[a-z0-9.-]+$")
    manifest: str
    speculativeDecoding: str = pydantic.Field(pattern=r"^[A-Za-z0-9_-]+$")
    routing: Annotated[str, pydantic.AfterValidator(_routing)]
    performance: Performance


def speculative_configs(config_map: dict[str, Any], where: str = "ConfigMap") -> list[dict[str, Any]]:
    """The speculative config each engine runs with: vLLM's JSON key, TRT-LLM's engine YAML section; one of
    another shape stops with `where` (the ConfigMap as errors name it) and the data key named."""
    configs: list[dict[str, Any]] = []
    for key, text in config_map.get("data", {}).items():
        at = f"{where}: data.{key}"
        if key == "speculative-config":
            configs.append(parse_json(text, at, at))
            if not isinstance(configs[-1], dict):
                raise ConfigError(at, "is not a JSON object")
        elif key.endswith(".yaml"):
            engine = parse_yaml(text, at, at)
            if len(engine) != 1 or not isinstance(engine[0] or {}, dict):
                raise ConfigError(at, "is not one YAML mapping")
            speculative = (engine[0] or {}).get("speculative_config")
            if not isinstance(speculative or {}, dict):
                raise ConfigError(f"{at}: speculative_config", "is not a mapping")
            configs += [speculative] if speculative else []
    return configs


def speculative_decoding_of(config_map: dict[str, Any], where: str) -> str:
    """`MTP`, `DFlash`, ... as the performance table spells upstream's method; `none` without one."""
    return _speculative_method(speculative_configs(config_map, where))


def _speculative_method(configs: Sequence[dict[str, Any]]) -> str:
    methods = [str(s.get("method") or s.get("decoding_type") or "") for s in configs]
    methods = [SPECULATIVE_METHODS.get(m.lower(), m) for m in methods if m]
    return methods[0] if methods else NO_SPECULATION


def _option(component: dict[str, Any], option: str) -> Optional[str]:
    """The value after `option` in the component's first container's args (VALUED_OPTIONS are checked to have one)."""
    args = [str(a) for a in component["podTemplate"]["spec"]["containers"][0].get("args", [])]
    return args[args.index(option) + 1] if option in args else None


def routing_of(dgd: dict[str, Any]) -> str:
    """`single`, `kv` (the frontend routes on KV events) or `<n>P<m>D` (prefill/decode replicas)."""
    components = dgd["spec"]["components"]
    if any(c["type"] in ("prefill", "decode") for c in components):
        count = {role: sum(c["replicas"] for c in components if c["type"] == role) for role in ("prefill", "decode")}
        return f"{count['prefill']}P{count['decode']}D"
    frontends = (c for c in components if c["type"] == "frontend")
    return "kv" if any(_option(c, "--router-mode") == "kv" for c in frontends) else "single"


@dataclass(eq=False)
class Recipe:
    """One target's upstream ConfigMap + DynamoGraphDeployment, with what the stack derives from them."""

    entry: TargetEntry
    config_map: dict[str, Any]
    dgd: dict[str, Any]

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
        return list(self.dgd["spec"]["components"])

    @property
    def component_names(self) -> list[str]:
        return [c["name"] for c in self.components]

    @property
    def disaggregated(self) -> bool:
        return any(c["type"] in ("prefill", "decode") for c in self.components)

    def worker_components(self) -> list[dict[str, Any]]:
        return [c for c in self.components if c["type"] in WORKER_COMPONENT_TYPES]

    @staticmethod
    def gpus_per_replica(component: dict[str, Any]) -> int:
        containers = component.get("podTemplate", {}).get("spec", {}).get("containers", [])
        return sum(int(c.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0)) for c in containers)

    @property
    def worker_replicas(self) -> dict[str, int]:
        """The replica set the figures were measured on: each worker component at its published replicas."""
        return {c["name"]: c["replicas"] for c in self.worker_components()}

    @property
    def gpus_per_replica_set(self) -> int:
        return sum(c["replicas"] * self.gpus_per_replica(c) for c in self.worker_components())

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

    @functools.cached_property
    def _speculative_configs(self) -> tuple[dict[str, Any], ...]:
        """Read once per recipe: TRT-LLM's engine YAML is parsed to find them."""
        return tuple(speculative_configs(self.config_map))

    @property
    def draft_tokens(self) -> Optional[int]:
        """Draft tokens per step (vLLM `num_speculative_tokens`, TRT-LLM `max_draft_len`); None without any."""
        counts = [int(c.get("num_speculative_tokens", c.get("max_draft_len", 0))) for c in self._speculative_configs]
        return max(counts) if any(counts) else None

    @functools.cached_property
    def checkpoints(self) -> list[str]:
        """Hugging Face repos the workers load: the served model plus any speculative draft model."""
        repos = [repo for c in self.worker_components() if (repo := _option(c, "--model")) is not None]
        for speculative in self._speculative_configs:
            draft = speculative.get("model") or speculative.get("speculative_model")  # MTP drafts with the base's heads
            repos += [draft] if draft else []
        return list(dict.fromkeys(repos))

    @property
    def speculative_decoding(self) -> str:
        return _speculative_method(self._speculative_configs)

    @property
    def routing(self) -> str:
        return routing_of(self.dgd)

    @property
    def served_model_name(self) -> str:
        names = (_option(c, "--served-model-name") for c in self.worker_components())
        name = next((n for n in names if n is not None), None)
        if name is None:
            raise ValueError(f"{self.id}: no --served-model-name in any worker")
        return name

    def copy_manifests(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return copy.deepcopy(self.config_map), copy.deepcopy(self.dgd)


BYTES_PER_GB = 10**9


class CheckpointSize(Data):
    sizeGB: float = pydantic.Field(gt=0)
    estimate: bool
    source: str = pydantic.Field(min_length=10)

    @property
    def bytes(self) -> int:
        return int(self.sizeGB * BYTES_PER_GB)


class CheckpointSizes(Data):
    schemaVersion: Literal[1]
    repositories: dict[str, CheckpointSize] = pydantic.Field(min_length=1)
    unlisted: CheckpointSize

    def size(self, repository: str) -> CheckpointSize:
        """The listed size, else the `unlisted` estimate."""
        return self.repositories.get(repository, self.unlisted)


class DownloaderFile(Data):
    """The model-download Job's downloader, pinned by the sha256 of every wheel it installs (catalog/downloader.yaml)."""

    schemaVersion: Literal[1]
    python: Literal["3.12"]
    requirements: dict[
        Annotated[str, pydantic.StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*==[0-9][0-9A-Za-z.+-]*$")],
        list[Annotated[str, pydantic.StringConstraints(pattern=r"^[0-9a-f]{64}$")]],
    ] = pydantic.Field(min_length=1)

    def lines(self) -> list[str]:
        """A requirements file for `pip install --require-hashes`."""
        return [f"{pin} " + " ".join(f"--hash=sha256:{h}" for h in hashes) for pin, hashes in self.requirements.items()]


@functools.lru_cache(maxsize=4)
def load_downloader(root: Path = DATA_DIR) -> DownloaderFile:
    return load_model(root / "downloader.yaml", DownloaderFile, root)


@functools.lru_cache(maxsize=4)
def load_checkpoint_sizes(root: Path = DATA_DIR) -> CheckpointSizes:
    return load_model(root / "checkpoints.yaml", CheckpointSizes, root)


@dataclass(frozen=True)
class DownloadJob:
    """One upstream download Job and the checkpoints it fetches, in upstream's order."""

    path: str
    manifest: dict[str, Any]
    checkpoints: tuple[tuple[str, str], ...]  # (env name, repo)

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def repos(self) -> list[str]:
        return [repo for _, repo in self.checkpoints]

    @property
    def script(self) -> str:
        return "\n".join(str(a) for a in self.container.get("args", []))

    @property
    def container(self) -> dict[str, Any]:
        (container,) = self.manifest["spec"]["template"]["spec"]["containers"]
        return dict(container)


@dataclass(frozen=True)
class ModelCacheFacts:
    claim: dict[str, Any]
    jobs: tuple[DownloadJob, ...]

    @property
    def size(self) -> str:
        """The claim's storage request as upstream states it (a stack may set another)."""
        return str(self.claim["spec"]["resources"]["requests"]["storage"])

    @property
    def repos(self) -> list[str]:
        """Every checkpoint some download Job fetches, first mention first."""
        return list(dict.fromkeys(repo for job in self.jobs for repo in job.repos))


def checkpoints_of(job: dict[str, Any], key: str) -> tuple[tuple[str, str], ...]:
    """The (env name, repo) pairs a download Job (of JobShape) fetches; a Job that is not one stops with `key` named."""
    containers = job["spec"]["template"]["spec"]["containers"]
    if len(containers) != 1:
        raise ConfigError(key, f"the Job has {len(containers)} containers", "exactly one (the download script)")
    container = containers[0]
    script = "\n".join(str(a) for a in [*container.get("command", []), *container.get("args", [])])
    found = tuple(
        (str(env["name"]), str(env["value"]))
        for env in container.get("env", [])
        if isinstance(env.get("value"), str)
        and re.match(HF_REPO, env["value"])
        and re.search(rf"\b{re.escape(env['name'])}\b", script)
    )
    if not found:
        raise ConfigError(
            key,
            "the Job reads no Hugging Face repo from an env var its script names",
            "env entries such as BASE_MODEL: org/repo, read by the script",
        )
    return found


def load_model_cache(root: Path, claim_path: str, job_paths: list[str]) -> ModelCacheFacts:
    key = "catalog/targets.yaml: modelCache"
    base = root.resolve()
    claim_file = data_file(base, claim_path, f"{key}.claim")
    claims = read_documents(claim_file, f"{key}.claim", base)
    if [d.get("kind") for d in claims] != ["PersistentVolumeClaim"]:
        raise ConfigError(
            f"{key}.claim", f"{claim_path} holds {[d.get('kind') for d in claims]}", "exactly one PersistentVolumeClaim"
        )
    check_shape(claims[0], PersistentVolumeClaimShape, f"{key}.claim: {data_label(claim_file, base)}: ")
    jobs: list[DownloadJob] = []
    for index, path in enumerate(job_paths):
        job_key = f"{key}.downloadJobs[{index}]"
        job_file = data_file(base, path, job_key)
        documents = read_documents(job_file, job_key, base)
        if len(documents) != 1:
            raise ConfigError(job_key, f"{path} holds {len(documents)} documents", "one Job per file")
        if documents[0].get("kind") != "Job":
            raise ConfigError(job_key, f"holds a {documents[0].get('kind')!r}, not a Job")
        check_shape(documents[0], JobShape, f"{job_key}: {data_label(job_file, base)}: ")
        jobs.append(DownloadJob(path, documents[0], checkpoints_of(documents[0], job_key)))
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}.downloadJobs", f"two download Jobs share a name: {sorted(names)}")
    return ModelCacheFacts(claims[0], tuple(jobs))


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
        return False if False in checks else None if None in checks else True


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


@dataclass(frozen=True, eq=False)
class Catalog:
    """`recipes` are the targets of the absorbed revision; `retired` the ones earlier revisions had, still
    selectable by a stack (each with a warning naming what replaced it)."""

    data: CatalogFile
    recipes: dict[str, Recipe]
    model_cache: ModelCacheFacts
    retired: Mapping[str, RetiredTarget] = field(default_factory=dict)

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
    speculative_configs(config_map, f"{key}.manifest: {name} ConfigMap")  # checked here, while the file is named
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
    for attribute, derived in derived_fields:
        if getattr(entry, attribute) != derived:
            raise ConfigError(
                f"{key}.{attribute}", f"{getattr(entry, attribute)!r}, but the manifest says {derived!r}", derived
            )
    return recipe


def load_catalog(root: Path = CATALOG_DIR) -> Catalog:
    """Parse and check the catalog data; bad data stops the program with the file and key named. Read once
    per directory, however the caller names it (`load_catalog()` and `load_catalog(root)` share the read)."""
    return _load_catalog(Path(root))


@functools.lru_cache(maxsize=4)
def _load_catalog(root: Path) -> Catalog:
    data = load_model(root / TARGETS_FILE, CatalogFile, root)
    recipes: dict[str, Recipe] = {}
    for index, entry in enumerate(data.targets):
        if entry.id in recipes:
            raise ConfigError(f"catalog/{TARGETS_FILE}: targets[{index}].id", f"duplicate target id {entry.id!r}")
        recipes[entry.id] = _recipe_from(entry, index, root)
    retired: dict[str, RetiredTarget] = {}
    known = {*recipes, *(old.id for old in data.retired)}
    for index, old in enumerate(data.retired):
        key = f"catalog/{TARGETS_FILE}: retired[{index}]"
        if old.id in recipes or old.id in retired:
            raise ConfigError(f"{key}.id", f"{old.id!r} is also a current or another retired target")
        for attribute in ("successor", "closest"):
            if (named := getattr(old.retired, attribute)) is not None and named not in known:
                raise ConfigError(f"{key}.retired.{attribute}", f"{named!r} is not in the catalog")
        retired[old.id] = RetiredTarget(_recipe_from(old, index, root, "retired"), old.retired)
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


class VendoredCrd(Data):
    """Where the vendored DGD CRD was copied from: `releaseTag` None until it is the chart version's own."""

    revision: str
    releaseTag: Optional[str]

    def warning(self, chart: Chart) -> Optional[str]:
        if self.releaseTag == f"v{chart.version}":
            return None
        return (
            f"catalog/platform.yaml crd: the DynamoGraphDeployment CRD the render checks against is upstream "
            f"{self.revision}, not the v{chart.version} tag the pinned {chart.name} chart installs "
            "(schemas/crds/PROVENANCE.md)"
        )


class CacheVariable(Data):
    """One cache's environment variable: `path` below the cache mount ("" the mount itself), for `backends`
    (every backend when None)."""

    name: str = pydantic.Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    path: str = pydantic.Field(pattern=r"^([a-z0-9][a-z0-9._-]*)?$")
    backends: Optional[tuple[str, ...]] = None
    source: str


class CompileCache(Data):
    """Where the GPU workers keep their compilation caches (`catalog/platform.yaml`, `compileCache`)."""

    mountPath: str = pydantic.Field(pattern=r"^/[a-z0-9/._-]+$")
    directory: str = pydantic.Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    variables: tuple[CacheVariable, ...]

    def directory_of(self, variable: CacheVariable) -> str:
        return f"{self.mountPath}/{variable.path}".rstrip("/")

    def values(self, backend: str) -> dict[str, str]:
        """Variable -> its directory, for a worker of `backend`."""
        return {v.name: self.directory_of(v) for v in self.variables if v.backends is None or backend in v.backends}


class PlatformFile(Data):
    chart: Chart
    crd: VendoredCrd
    compileCache: CompileCache
    values: dict[str, Any]
    readiness: Readiness


@functools.lru_cache(maxsize=4)
def load_platform(root: Path = CATALOG_DIR) -> PlatformFile:
    """The pinned Dynamo platform chart and the values the stack always sets."""
    return load_model(root / "platform.yaml", PlatformFile, root)
