"""SageMaker facts as data (`catalog/sagemaker_instances.yaml`, `catalog/sagemaker_lmi.yaml`: instance types,
the pinned LMI containers, the checkpoints the Hugging Face path serves and how a model is judged to fit), and
JumpStart models resolved from them. The loaders refuse data that contradicts its own stated rule.

A pinned JumpStart model resolves into the inputs of CreateModel and a production variant with plain boto3,
not the SageMaker SDK (a ~1 GB install whose JumpStart resolution is private, while the data is public JSON);
the rules mirror the SDK's (`sagemaker.jumpstart`), so the stack deploys what `JumpStartModel(...).deploy()`
would. A spec is *verified* when it carries provenance: read from the content bucket just now, or committed by
`tools/refresh_jumpstart_snapshot.py` with its sha256 in `provenance.json` (a spec edited since is unverified
again). The SDK's bucket and directory overrides are honoured (a mirror's bucket is part of the record).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal, NamedTuple, Optional, Protocol

import pydantic

from serving_stack.errors import ConfigError, bounded, key_path
from serving_stack.facts.aws import version_key
from serving_stack.facts.strict_files import DATA_DIR, PROJECT_DIR, Data, load_json, load_model, parse_json, read_bytes

Storage = Literal["ebs", "nvme"]
GpuArchitecture = Literal["ampere", "ada", "hopper", "blackwell"]
Precision = Literal["bf16", "nvfp4"]
VERSION = re.compile(r"^\d+\.\d+\.\d+$")
# The image tag of a listed container whose data file was not read (after its vLLM version, so the tag still
# reads as a version): it renders, and `pulumi up` refuses it.
UNREAD_TAG = "{vllm}-tag-not-read"


class Estimate(Data):
    value: float = pydantic.Field(gt=0)
    basis: str = pydantic.Field(min_length=1)


class StorageRule(Data):
    """The SageMaker SDK's rule for instance types without EBS volumes (see the data file for its source)."""

    familiesContaining: tuple[str, ...]
    familyPrefixes: tuple[str, ...]
    source: str = pydantic.Field(min_length=1)

    def says_nvme(self, instance_type: str) -> bool:
        family = instance_type.split(".")[1]
        return any(part in family for part in self.familiesContaining) or family.startswith(self.familyPrefixes)


class InstanceType(Data):
    gpus: int = pydantic.Field(gt=0)
    gpu: str
    gpuArchitecture: GpuArchitecture
    gpuMemoryGb: int = pydantic.Field(gt=0, description="per GPU")
    storage: Storage = pydantic.Field(
        description="ebs: the variant takes VolumeSizeInGB and a volume KMS key; nvme: local storage only, "
        "hardware-encrypted, and SageMaker rejects both settings"
    )
    localNvmeGb: Optional[int] = pydantic.Field(default=None, gt=0)
    storageSource: str = pydantic.Field(min_length=1)
    hourlyUsd: Optional[float] = pydantic.Field(gt=0)
    priceSource: str

    @pydantic.model_validator(mode="after")
    def _nvme_has_local_storage(self) -> InstanceType:
        if (self.storage == "nvme") != (self.localNvmeGb is not None):
            raise ValueError("storage nvme needs localNvmeGb, and localNvmeGb means storage nvme")
        return self


class InstancesFile(Data):
    storageRule: StorageRule
    instances: dict[Annotated[str, pydantic.StringConstraints(pattern=r"^ml\.[a-z0-9-]+\.[a-z0-9]+$")], InstanceType]

    @pydantic.model_validator(mode="after")
    def _storage_follows_the_rule(self) -> InstancesFile:
        for name, instance in self.instances.items():
            if self.storageRule.says_nvme(name) and instance.storage != "nvme":
                raise ValueError(
                    f"{name}: the storage rule ({self.storageRule.source.split(':')[0]}) says local NVMe, "
                    "the data says ebs"
                )
        return self


class Timeouts(Data):
    modelDataDownload: Optional[int] = pydantic.Field(ge=60, le=3600)
    containerStartupHealthCheck: int = pydantic.Field(ge=60, le=3600)


class Container(Data):
    """An image the Hugging Face path may run and the vLLM it bundles. `tag` None: named by its data file but
    not read, so the image is a placeholder that the offline render may show and `pulumi up` refuses."""

    name: str = pydantic.Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    release: str = pydantic.Field(min_length=1)
    repository: str = pydantic.Field(min_length=1)
    tag: Optional[str] = pydantic.Field(pattern=r"^[A-Za-z0-9._-]+$")
    vllmVersion: str = pydantic.Field(pattern=VERSION.pattern)
    argumentForm: str
    source: str = pydantic.Field(min_length=1)


class TensorParallel(Data):
    variable: str = pydantic.Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    value: Literal["max", "gpus"] = pydantic.Field(description="max: the container's own word; gpus: the count")


class ArgumentForm(Data):
    """How a container reads vLLM engine arguments: environment variables `<prefix><FLAG>`."""

    prefix: str = pydantic.Field(pattern=r"^[A-Z][A-Z0-9_]*_$")
    flagValue: str
    renames: dict[str, str] = pydantic.Field(default_factory=dict)
    modelVariable: str = pydantic.Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    tensorParallel: TensorParallel
    environment: dict[str, str] = pydantic.Field(default_factory=dict)
    source: str = pydantic.Field(min_length=1)

    def variable(self, flag: str) -> str:
        name = flag.removeprefix("--")
        return self.renames.get(name, self.prefix + name.upper().replace("-", "_"))

    def environment_of(self, arguments: Mapping[str, Optional[str]]) -> dict[str, str]:
        return {self.variable(flag): self.flagValue if value is None else value for flag, value in arguments.items()}


class Unverified(Data):
    architectures: tuple[GpuArchitecture, ...] = pydantic.Field(min_length=1)
    what: str = pydantic.Field(min_length=1)


EngineFlag = Annotated[str, pydantic.StringConstraints(pattern=r"^--[a-z0-9][a-z0-9-]*$")]


class EngineArguments(Data):
    """The vLLM arguments a checkpoint needs, as vLLM spells them; a bare flag has the value None."""

    source: str = pydantic.Field(min_length=1)
    common: dict[EngineFlag, Optional[str]]
    byArchitecture: dict[GpuArchitecture, dict[EngineFlag, Optional[str]]] = pydantic.Field(default_factory=dict)
    unverified: tuple[Unverified, ...] = ()

    def for_architecture(self, architecture: GpuArchitecture) -> dict[str, Optional[str]]:
        return {**self.common, **self.byArchitecture.get(architecture, {})}

    def unverified_on(self, architecture: GpuArchitecture) -> tuple[str, ...]:
        return tuple(item.what for item in self.unverified if architecture in item.architectures)


class Registries(Data):
    source: str = pydantic.Field(min_length=1)
    accounts: dict[str, str]


class Fit(Data):
    gpuMemoryUtilization: Estimate
    perGpuOverheadGb: Estimate
    minimumCacheGb: Estimate


class RunsAs(Data):
    path: str = pydantic.Field(pattern=r"^[a-z0-9-]+$")
    basis: str = pydantic.Field(min_length=1)


class HuggingFaceRepo(Data):
    precision: Precision
    weightsGb: float = pydantic.Field(gt=0)
    weightsBasis: str = pydantic.Field(min_length=1)
    minimumVllm: str = pydantic.Field(pattern=VERSION.pattern)
    vllmSource: str = pydantic.Field(min_length=1)
    runsAs: RunsAs
    engineArguments: EngineArguments


class EnvironmentLimits(Data):
    """What SageMaker's CreateModel accepts as a container's environment."""

    maxEntries: int = pydantic.Field(ge=1)
    maxKeyLength: int = pydantic.Field(ge=1)
    maxValueLength: int = pydantic.Field(ge=1)
    source: str


class S3Staging(Data):
    """How a Hugging Face endpoint runs weights staged in S3 (`catalog/sagemaker_lmi.yaml`, `s3ModelData`)."""

    localPath: str = pydantic.Field(pattern=r"^/[a-z0-9/._-]+$")
    environment: dict[str, str]
    downloadTimeoutSeconds: int = pydantic.Field(ge=60, le=3600)
    source: str = pydantic.Field(min_length=1)


class LmiFile(Data):
    containers: tuple[Container, ...] = pydantic.Field(min_length=1)
    argumentForms: dict[str, ArgumentForm]
    inferenceAmiVersion: str
    registries: Registries
    environmentLimits: EnvironmentLimits
    timeouts: Timeouts
    volumeSizeGb: int = pydantic.Field(ge=1, le=512)
    s3ModelData: S3Staging
    fit: Fit
    repositories: dict[str, HuggingFaceRepo]

    @pydantic.model_validator(mode="after")
    def _forms_exist(self) -> LmiFile:
        for container in self.containers:
            if container.argumentForm not in self.argumentForms:
                raise ValueError(f"container {container.name}: argumentForm {container.argumentForm!r} is not listed")
        return self

    def image(self, container: Container, region: str) -> Optional[str]:
        """`container`'s image in the Deep Learning Containers registry of `region` (UNREAD_TAG where the tag was
        not read), or None where no registry is listed."""
        account = self.registries.accounts.get(region)
        if account is None:
            return None
        suffix = ".amazonaws.com.cn" if region.startswith("cn-") else ".amazonaws.com"
        tag = container.tag or UNREAD_TAG.format(vllm=container.vllmVersion)
        return f"{account}.dkr.ecr.{region}{suffix}/{container.repository}:{tag}"


@functools.lru_cache(maxsize=4)
def load_instances_file(root: Path = DATA_DIR) -> InstancesFile:
    return load_model(root / "sagemaker_instances.yaml", InstancesFile, root)


@functools.lru_cache(maxsize=4)
def load_lmi(root: Path = DATA_DIR) -> LmiFile:
    return load_model(root / "sagemaker_lmi.yaml", LmiFile, root)


MANIFEST_KEY = "models_manifest.json"
PROVENANCE_FILE = "provenance.json"
CONTENT_BUCKET_OVERRIDE = "AWS_JUMPSTART_CONTENT_BUCKET_OVERRIDE"
GATED_BUCKET_OVERRIDE = "AWS_JUMPSTART_GATED_CONTENT_BUCKET_OVERRIDE"
MODEL_BUCKET_OVERRIDE = "AWS_JUMPSTART_MODEL_BUCKET_OVERRIDE"
MANIFEST_DIR_OVERRIDE = "AWS_JUMPSTART_MANIFEST_LOCAL_ROOT_DIR_OVERRIDE"
SPECS_DIR_OVERRIDE = "AWS_JUMPSTART_SPECS_LOCAL_ROOT_DIR_OVERRIDE"
ENVIRONMENT_OVERRIDES = (
    CONTENT_BUCKET_OVERRIDE,
    GATED_BUCKET_OVERRIDE,
    MODEL_BUCKET_OVERRIDE,
    MANIFEST_DIR_OVERRIDE,
    SPECS_DIR_OVERRIDE,
)


def content_bucket(region: str, gated: bool = False) -> str:
    """Specs and public artifacts, or (`gated`) the artifacts of EULA-gated models, readable only with
    `ModelAccessConfig.AcceptEula`; the overrides let a mirror or a test bucket stand in."""
    if gated:
        return os.environ.get(GATED_BUCKET_OVERRIDE) or f"jumpstart-private-cache-prod-{region}"
    return os.environ.get(CONTENT_BUCKET_OVERRIDE) or f"jumpstart-cache-prod-{region}"


def sha256_hex(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class SpecProvenance:
    """Where a spec was read: the object in the content bucket and the sha256 of its bytes."""

    bucket: str
    key: str
    sha256: str

    def label(self) -> str:
        """Short and stable, fit for an AWS tag value (at most 256 characters)."""
        return f"s3://{self.bucket}/{self.key}@sha256:{self.sha256[:16]}"


class SpecSource(Protocol):
    """The live content bucket, or a committed copy of it."""

    def read_json(self, key: str) -> Any: ...

    def read_spec(self, key: str) -> tuple[dict[str, Any], Optional[SpecProvenance]]: ...


@dataclass(frozen=True)
class S3SpecSource:
    """Reads the regional content bucket, as the SDK does; every spec it reads is verified by the read."""

    region: str
    s3_client: Any

    def _get(self, key: str) -> bytes:
        return bytes(self.s3_client.get_object(Bucket=content_bucket(self.region), Key=key)["Body"].read())

    def read_json(self, key: str) -> Any:
        return json.loads(self._get(key))

    def read_spec(self, key: str) -> tuple[dict[str, Any], Optional[SpecProvenance]]:
        body = self._get(key)
        return json.loads(body), SpecProvenance(content_bucket(self.region), key, sha256_hex(body))


@dataclass(frozen=True)
class SnapshotSpecSource:
    """Reads a directory laid out like the bucket, so previews are repeatable and need no S3 access.

    The SDK's local-directory overrides still win, so one checkout can point at a freshly fetched copy.
    """

    directory: Path

    def _root(self, key: str) -> Path:
        override = os.environ.get(MANIFEST_DIR_OVERRIDE if key == MANIFEST_KEY else SPECS_DIR_OVERRIDE)
        return Path(override or self.directory)

    def read_json(self, key: str) -> Any:
        path, label = snapshot_file(self._root(key), key)
        return load_json(path, label)

    def read_spec(self, key: str) -> tuple[dict[str, Any], Optional[SpecProvenance]]:
        root = self._root(key)
        path, label = snapshot_file(root, key)
        body = read_bytes(path, label, label)
        spec = parse_json(body, label, label)
        if not isinstance(spec, dict):
            raise ConfigError(label, f"is a JSON {type(spec).__name__}, not an object (a JumpStart spec)")
        # The record `tools/refresh_jumpstart_snapshot.py` wrote for `key`, if the bytes are still those it fetched.
        record = read_provenance_file(root).get(key)
        if record is None or record.get("sha256") != sha256_hex(body):
            return spec, None
        return spec, SpecProvenance(record["bucket"], record["key"], record["sha256"])


def file_label(path: Path) -> str:
    """A snapshot file as errors name it: relative to the project (`catalog/jumpstart/...`) where it is inside."""
    try:
        return path.relative_to(PROJECT_DIR).as_posix()
    except ValueError:
        return bounded(str(path), quote=False)


def snapshot_file(root: Path, key: str) -> tuple[Path, str]:
    """`root/key`, kept inside `root` (a manifest's `spec_key` is data too), and its label."""
    base = root.resolve()
    try:
        path = (base / key).resolve()
    except (OSError, RuntimeError, ValueError):
        path = base / "?"
    if not path.is_relative_to(base):
        raise ConfigError(file_label(base), f"the key {bounded(key)} leads out of the snapshot directory")
    return path, file_label(path)


def read_provenance_file(root: Path) -> dict[str, dict[str, Any]]:
    path = root / PROVENANCE_FILE
    if not path.is_file():
        return {}
    label = file_label(path.resolve())
    records = load_json(path, label)
    if not isinstance(records, dict):
        raise ConfigError(label, f"is a JSON {type(records).__name__}, not an object of records by spec key")
    for spec_key, record in records.items():
        where = f"{label}: {key_path([spec_key])}"
        if not isinstance(record, dict):
            raise ConfigError(where, f"is a JSON {type(record).__name__}, not an object")
        missing = [f for f in ("bucket", "key", "etag", "sha256") if not isinstance(record.get(f), str)]
        if missing or not isinstance(record.get("fetched", ""), str):
            raise ConfigError(f"{where}.{(missing or ['fetched'])[0]}", "is missing or not a string")
    return records


# A config component may not change these (SDK: JumpStartConfigComponent.OVERRIDING_DENY_LIST).
_COMPONENT_DENY_LIST = frozenset(
    [
        "model_id",
        "url",
        "version",
        "min_sdk_version",
        "deprecated",
        "deprecated_message",
        "deprecate_warn_message",
        "resource_name_base",
        "gated_bucket",
        "training_supported",
        "incremental_training_supported",
    ]
)


class JumpStartError(ConfigError):
    """A JumpStart setting that cannot resolve; a `ConfigError`, so it reads like every config error."""


@dataclass(frozen=True)
class ConfigKeys:
    """The config key paths named in errors, so a message points at the line to fix."""

    model_id: str
    version: str
    instance_type: str
    accept_eula: str
    spec: str
    region: str = "aws:region"
    allow_unverified: str = "sagemaker.allowUnverifiedSpecs"

    @classmethod
    def under(cls, prefix: str) -> ConfigKeys:
        return cls(f"{prefix}.modelId", f"{prefix}.version", f"{prefix}.instanceType", f"{prefix}.acceptEula", prefix)


DEFAULT_KEYS = ConfigKeys.under("jumpstart")


@dataclass(frozen=True)
class S3ModelData:
    """One CreateModel `S3DataSource`; `accept_eula` is None when the data needs no `ModelAccessConfig`."""

    s3_uri: str
    s3_data_type: str
    compression_type: str
    accept_eula: bool | None = None

    @classmethod
    def at(cls, uri: str, accept_eula: bool | None = None) -> S3ModelData:
        """A key ending in "/" is an uncompressed prefix (loaded as is); anything else a model.tar.gz."""
        if uri.endswith("/"):
            return cls(uri, "S3Prefix", "None", accept_eula)
        return cls(uri, "S3Object", "Gzip", accept_eula)


@dataclass(frozen=True)
class AdditionalModelData:
    """Mounted at /opt/ml/additional-model-data-sources/<channel_name>, e.g. a speculative draft."""

    channel_name: str
    s3: S3ModelData


@dataclass(frozen=True)
class ModelContainer:
    """The SageMaker model's primary container. A Hugging Face container reads its weights from S3 with
    network isolation, or downloads them from the Hub without; `needs_hf_token`: add the token to its
    environment; `model_data_kms_key`: the key the staged weights are encrypted with."""

    image: str
    environment: Mapping[str, str]
    model_data: Optional[S3ModelData]
    additional_model_data: tuple[AdditionalModelData, ...]
    enable_network_isolation: bool
    needs_hf_token: bool = False
    model_data_kms_key: Optional[str] = None


class VariantDefaults(NamedTuple):
    """What the model source suggests for the variant where the endpoint config says nothing, and notes."""

    model_data_download_timeout: Optional[int]
    container_startup_health_check_timeout: Optional[int]
    volume_size_gb: Optional[int]
    inference_ami_version: Optional[str] = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResolvedJumpStartModel:
    """What a SageMaker model and production variant take from the spec; nothing account-specific."""

    model_id: str
    config_name: str | None
    container: ModelContainer
    defaults: VariantDefaults
    gated: bool
    eula_key: str | None
    provenance: Optional[SpecProvenance]


def resolve_jumpstart_model(
    model_id: str,
    version: str,
    region: str,
    instance_type: str,
    *,
    accept_eula: bool,
    source: SpecSource,
    keys: ConfigKeys = DEFAULT_KEYS,
    allow_unverified: bool = False,
) -> ResolvedJumpStartModel:
    """Resolve one pinned (model id, version) for an instance type and region, or raise `JumpStartError`.

    A spec without provenance (not fetched from the content bucket) is refused unless `allow_unverified`:
    its image tags, artifact keys and gating would otherwise be guesses that reach `pulumi up`.
    """
    manifest, fields = source.read_json(MANIFEST_KEY), ("model_id", "version", "spec_key")
    if not isinstance(manifest, list):
        raise JumpStartError(keys.spec, f"{MANIFEST_KEY} is a JSON {type(manifest).__name__}, not a list of models")
    for index, entry in enumerate(manifest):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(f), str) for f in fields):
            raise JumpStartError(
                keys.spec, f"{MANIFEST_KEY}[{index}] is not an object with {', '.join(fields)} strings"
            )
    entries = {entry["version"]: entry for entry in manifest if entry["model_id"] == model_id}
    if not entries:
        known = sorted({entry["model_id"] for entry in manifest})
        close = difflib.get_close_matches(model_id, known, n=5, cutoff=0.5)
        raise JumpStartError(
            keys.model_id,
            f"unknown JumpStart model id {model_id!r}",
            ", ".join(close) or f"one of the {len(known)} ids in {MANIFEST_KEY}",
        )
    versions = ", ".join(sorted(entries, key=version_key))
    if not version or "*" in version:
        raise JumpStartError(keys.version, f"{version!r} is not pinned; pin a version", versions)
    if version not in entries:
        raise JumpStartError(keys.version, f"{model_id} has no version {version!r}", versions)

    spec_key = entries[version]["spec_key"]
    raw_spec, provenance = source.read_spec(spec_key)
    if provenance is None and not allow_unverified:
        raise JumpStartError(
            keys.spec,
            f"spec {spec_key} was not fetched from the JumpStart content bucket (no "
            "provenance: hand-made or edited since)",
            f"a spec pinned by python -m tools.refresh_jumpstart_snapshot --model-id {model_id} --version <published version> "
            f"--region {region}, or {keys.allow_unverified}: true (tests and demos only)",
        )
    try:
        _refuse_model_package(raw_spec, instance_type, region, keys)
        spec, config_name = _select_config(raw_spec, instance_type)
        what = f"{model_id} {version}"
        supported = tuple(spec.get("supported_inference_instance_types") or ())
        if instance_type not in supported:
            raise JumpStartError(keys.instance_type, f"{what} does not support {instance_type!r}", ", ".join(supported))
        eula_key = spec.get("hosting_eula_key")
        gated = bool(spec.get("gated_bucket")) or eula_key is not None
        if gated and not accept_eula:
            raise _eula_error(keys, what, region, eula_key)
        variants = spec.get("hosting_instance_type_variants") or {}
        deploy_kwargs = spec.get("deploy_kwargs") or {}
        # The model-bucket override moves artifacts only (specs stay put), as in the SDK.
        bucket = os.environ.get(MODEL_BUCKET_OVERRIDE) or content_bucket(region, bool(spec.get("gated_bucket")))
        return ResolvedJumpStartModel(
            model_id=model_id,
            config_name=config_name,
            container=ModelContainer(
                image=_image_uri(variants, instance_type, region, keys, what),
                model_data=S3ModelData.at(
                    _s3_uri(bucket, _artifact_key(spec, variants, instance_type, keys)), True if gated else None
                ),
                additional_model_data=tuple(_additional_sources(spec, region, accept_eula, keys)),
                environment=MappingProxyType(_environment(spec, variants, instance_type)),
                enable_network_isolation=bool(spec.get("inference_enable_network_isolation", False)),
            ),
            defaults=VariantDefaults(
                deploy_kwargs.get("model_data_download_timeout"),
                deploy_kwargs.get("container_startup_health_check_timeout"),
                spec.get("inference_volume_size"),
            ),
            gated=gated,
            eula_key=eula_key,
            provenance=provenance,
        )
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as error:  # a spec field of another shape
        raise JumpStartError(
            keys.spec, f"spec {spec_key} cannot be read: {bounded(f'{type(error).__name__}: {error}', quote=False)}"
        ) from None


def _s3_uri(bucket: str, key: str) -> str:
    return key if key.startswith("s3://") else f"s3://{bucket}/{key}"


def _refuse_model_package(spec: dict[str, Any], instance_type: str, region: str, keys: ConfigKeys) -> None:
    """Marketplace/proprietary models deploy from a ModelPackage (SDK: `_retrieve_model_package_arn`), which
    takes no image or artifact from the spec: this stack builds models from containers only."""
    variants = (spec.get("hosting_instance_type_variants") or {}).get("variants") or {}
    per_instance = [
        v
        for v in (instance_type, _instance_family(instance_type))
        if ((variants.get(v) or {}).get("regional_properties") or {}).get("model_package_arn")
    ]
    if spec.get("hosting_model_package_arns") or per_instance:
        raise JumpStartError(
            keys.model_id,
            f"{spec.get('model_id')} {spec.get('version')} is a model-package "
            f"(Marketplace) model: SageMaker deploys it from a ModelPackage ARN in {region}, not from "
            "an image and artifacts, and this stack creates container models only",
            "open-weights JumpStart models, or source: huggingface",
        )


def _eula_error(keys: ConfigKeys, what: str, region: str, eula_key: str | None) -> JumpStartError:
    where = f"https://{content_bucket(region)}.s3.{region}.amazonaws.com/{eula_key}" if eula_key else "its model page"
    return JumpStartError(
        keys.accept_eula, f"{what} is gated and needs its EULA accepted", f"true, set after reading the EULA at {where}"
    )


def _deep_override(
    base: dict[str, Any], override: dict[str, Any], deny: frozenset[str] = frozenset()
) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if key in deny:
            continue
        both_dicts = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _deep_override(merged[key], value) if both_dicts else value
    return merged


def _select_config(spec: dict[str, Any], instance_type: str) -> tuple[dict[str, Any], str | None]:
    """Apply the best-ranked inference config that supports the instance type, as the SDK deploys it."""
    configs = spec.get("inference_configs") or {}
    components = spec.get("inference_config_components") or {}
    rankings = (spec.get("inference_config_rankings") or {}).get("overall") or {}
    ranking = rankings.get("rankings") or sorted(configs)
    for name in ranking:
        resolved = spec
        for component in configs[name].get("component_names") or ():
            resolved = _deep_override(resolved, components[component], _COMPONENT_DENY_LIST)
        if instance_type in (resolved.get("supported_inference_instance_types") or ()):
            return resolved, name
    return spec, None


def _instance_family(instance_type: str) -> str | None:
    parts = instance_type.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "ml" else None


def _variant(variants: dict[str, Any], name: str | None, section: str) -> dict[str, Any]:
    return ((variants.get("variants") or {}).get(name) or {}).get(section) or {}


def _image_uri(variants: dict[str, Any], instance_type: str, region: str, keys: ConfigKeys, what: str) -> str:
    """The instance-type variant wins over the family variant ("ml.p5.48xlarge" over "p5")."""
    names = (instance_type, _instance_family(instance_type))
    alias = next(filter(None, (_variant(variants, v, "regional_properties").get("image_uri") for v in names)), None)
    if not alias or not alias.startswith("$"):
        raise JumpStartError(
            keys.instance_type,
            f"{what} names no image for {instance_type!r}",
            ", ".join(sorted(variants.get("variants") or {})),
        )
    regional = variants.get("regional_aliases") or {}
    image = (regional.get(region) or {}).get(alias[1:])
    if not image:
        raise JumpStartError(keys.region, f"{what} has no image in {region!r}", ", ".join(sorted(regional)))
    return str(image)


def _artifact_key(spec: dict[str, Any], variants: dict[str, Any], instance_type: str, keys: ConfigKeys) -> str:
    """Only prepacked artifacts: a script-uri model needs the SDK's repack step, which a stack cannot do."""
    if spec.get("hosting_use_script_uri", True):
        raise JumpStartError(
            keys.model_id,
            f"{spec['model_id']} {spec['version']} is a script-mode model (hosting_use_script_uri)",
            "models with a prepacked artifact",
        )
    names = (instance_type, _instance_family(instance_type))
    keyed = (_variant(variants, v, "properties").get("prepacked_artifact_key") for v in names)
    return str(next(filter(None, keyed), None) or spec["hosting_prepacked_artifact_key"])


def _additional_sources(
    spec: dict[str, Any], region: str, accept_eula: bool, keys: ConfigKeys
) -> list[AdditionalModelData]:
    """Speculative-decoding drafts only: the SDK attaches no other kind to a model."""
    sources: list[AdditionalModelData] = []
    for entry in (spec.get("hosting_additional_data_sources") or {}).get("speculative_decoding") or ():
        provider = entry.get("provider") or {}
        gated = entry.get("hosting_eula_key") is not None or provider.get("classification") == "gated"
        if gated and not accept_eula:
            raise _eula_error(keys, f"{spec['model_id']} {spec['version']}", region, entry.get("hosting_eula_key"))
        bucket = f"sagemaker-sd-models-prod-{region}"  # the SDK's draft-model bucket, unless JumpStart's own
        if provider.get("name") == "JumpStart":
            bucket = content_bucket(region, gated)
        data = entry["s3_data_source"]
        uri = _s3_uri(bucket, data["s3_uri"])
        s3 = S3ModelData(uri, data["s3_data_type"], data["compression_type"], True if gated else None)
        sources.append(AdditionalModelData(entry["channel_name"], s3))
    return sources


def _environment(spec: dict[str, Any], variants: dict[str, Any], instance_type: str) -> dict[str, str]:
    """Spec defaults the model class needs, then the family variant, then the instance-type variant.

    Variables with `required_for_model_class: false` belong to the SDK's script mode (SAGEMAKER_PROGRAM
    and friends); `JumpStartModel` leaves them out, so do we.
    """
    environment = {
        variable["name"]: str(variable["default"])
        for variable in spec.get("inference_environment_variables") or ()
        if variable.get("required_for_model_class")
    }
    for variant in (_instance_family(instance_type), instance_type):
        overlay = _variant(variants, variant, "properties").get("environment_variables") or {}
        environment.update({name: str(value) for name, value in overlay.items()})
    return environment
