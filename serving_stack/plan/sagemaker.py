"""From the `sagemaker` config block to what each SageMaker endpoint deploys (`PlannedEndpoint`, the
`SageMakerEndpoint` component's input), as plain values: pure, and run before any resource is registered, so
every value the component sets is concrete at preview and a bad setting fails with its key path.

- The model: a pinned JumpStart model (its spec from the committed snapshot or the content bucket,
  `specSource`) or a Hugging Face repo on the pinned LMI image of `catalog/sagemaker_lmi.yaml`, with the
  container, model source, served model name and the variant defaults the model suggests.
- The fit: tensor parallelism spreads the weights over every GPU of the instance (LMI
  `OPTION_TENSOR_PARALLEL_DEGREE: max`), so the budget is the instance's GPU memory at vLLM's utilization minus
  a per-GPU overhead, and what remains after the weights must hold a minimum cache (numbers: the LMI file's `fit`).
- The waits: the Terraform provider behind pulumi-aws waits for InService after CreateEndpoint and
  UpdateEndpoint with a fixed 60-minute waiter (aws-sdk-go `WaitUntilEndpointInService`: 120 x 30 s). Worst
  case = instance provisioning (data) + the model download timeout (with S3 model data) + the container startup
  health-check timeout, and for an update + one bake (`waitIntervalSeconds`) per traffic shift +
  `terminationWaitSeconds`; SageMaker stops a deployment at `maximumExecutionTimeoutSeconds` and rolls it back,
  so that must cover the update and stay within the provider's wait.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Optional, Union

import boto3

from serving_stack.config.sagemaker import (
    CONTAINER_SETTING,
    Autoscaling,
    DataCapture,
    Deployment,
    RollbackAlarms,
    SageMakerConfig,
    SageMakerEndpointConfig,
)
from serving_stack.config.stack import StackConfig
from serving_stack.contract.outputs import ServingEndpoint
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.sagemaker import (
    AdditionalModelData,
    ConfigKeys,
    Container,
    EnvironmentLimits,
    Fit,
    HuggingFaceRepo,
    InstanceType,
    LmiFile,
    S3ModelData,
    S3SpecSource,
    SnapshotSpecSource,
    SpecSource,
    resolve_jumpstart_model,
)
from serving_stack.facts.strict_files import PROJECT_DATA_DIR
from serving_stack.plan.placeholders import Placeholder

# Tags on the endpoint's model, config and endpoint: what it serves and from what, readable in AWS, by the
# cleanup of retained configs (docs/sagemaker.md) and by `summary.md`.
ENDPOINT_TAG = "nemotron.nvidia.com/sagemaker-endpoint"
MODEL_SOURCE_TAG = "nemotron.nvidia.com/model-source"
SPEC_PROVENANCE_TAG = "nemotron.nvidia.com/jumpstart-spec"
PRECISION_TAG = "nemotron.nvidia.com/precision"
UNVERIFIED = "unverified"


@dataclass(frozen=True)
class JumpStartSource:
    """`provenance`: where the spec was fetched (`SpecProvenance.label`), None for an unverified spec."""

    model_id: str
    version: str
    provenance: Optional[str]


@dataclass(frozen=True)
class HuggingFaceSource:
    """`precision_path`: how the recipe runs the checkpoint (`catalog/sagemaker_lmi.yaml`, `runsAs`).
    `container` / `vllm_version`: the listed container picked for the checkpoint's `minimum_vllm` (None with
    an image of one's own); `engine_arguments`: the recipe's vLLM arguments it is given; `placeholders`: what
    the image still lacks for a real `up`."""

    repo: str
    pinned_image: bool
    precision_path: str
    container: Optional[str] = None
    vllm_version: Optional[str] = None
    minimum_vllm: Optional[str] = None
    engine_arguments: Mapping[str, Optional[str]] = field(default_factory=lambda: MappingProxyType({}))
    placeholders: tuple[Placeholder, ...] = ()


ModelSource = Union[JumpStartSource, HuggingFaceSource]


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
    needs_hf_token: bool
    model_data_kms_key: Optional[str] = None


@dataclass(frozen=True)
class ProductionVariant:
    name: str
    instance_type: str
    initial_instance_count: int
    model_data_download_timeout: Optional[int]
    container_startup_health_check_timeout: Optional[int]
    volume_size_gb: Optional[int]
    ebs_storage: bool
    inference_ami_version: Optional[str]


@dataclass(frozen=True)
class BlueGreen:
    """Blue/green traffic shifting; sizes are percent of capacity."""

    type: Literal["CANARY", "LINEAR", "ALL_AT_ONCE"]
    canary_size: int
    linear_step_size: int
    wait_interval_seconds: int
    termination_wait_seconds: int
    maximum_execution_timeout_seconds: int
    rollback_alarms: RollbackAlarms  # the config block: thresholds, period, evaluation periods

    @property
    def traffic_steps(self) -> int:
        """Traffic shifts, each followed by a bake of `wait_interval_seconds` (an upper bound for CANARY)."""
        if self.type == "LINEAR":
            return math.ceil(100 / self.linear_step_size)
        return 2 if self.type == "CANARY" else 1

    @classmethod
    def of(cls, config: Deployment, shifting: Literal["CANARY", "LINEAR", "ALL_AT_ONCE"]) -> BlueGreen:
        return cls(
            shifting,
            config.canarySize,
            config.linearStepSize,
            config.waitIntervalSeconds,
            config.terminationWaitSeconds,
            config.maximumExecutionTimeoutSeconds,
            config.rollbackAlarms,
        )


def shifted_instances(instances: int, percent: int) -> int:
    """Instances a capacity-percent step moves: SageMaker rounds up to whole instances."""
    return math.ceil(instances * percent / 100)


@dataclass(frozen=True)
class WaitBudget:
    """Worst-case seconds of a create and of a blue/green update, against the provider's InService wait."""

    provisioning: int
    model_download: int
    startup: int
    traffic_shifting: int
    termination: int

    @property
    def create_seconds(self) -> int:
        return self.provisioning + self.model_download + self.startup

    @property
    def update_seconds(self) -> int:
        return self.create_seconds + self.traffic_shifting + self.termination


@dataclass(frozen=True)
class PlannedEndpoint:
    """`notes`: what an operator should know but that is no error (a slower precision path), logged at `up`."""

    name: str
    region: str
    source: ModelSource
    container: ModelContainer
    variant: ProductionVariant
    scaling: Autoscaling  # the config block: target tracking on invocations per instance
    deployment: BlueGreen
    data_capture: DataCapture
    kms_key_arn: Optional[str]
    endpoint: ServingEndpoint
    waits: WaitBudget
    notes: tuple[str, ...] = ()

    @property
    def spec_verified(self) -> bool:
        return not isinstance(self.source, JumpStartSource) or self.source.provenance is not None

    @property
    def tags(self) -> Mapping[str, str]:
        tags = {ENDPOINT_TAG: self.name}
        if isinstance(self.source, JumpStartSource):
            tags[MODEL_SOURCE_TAG] = f"jumpstart:{self.source.model_id}@{self.source.version}"
            tags[SPEC_PROVENANCE_TAG] = self.source.provenance or UNVERIFIED
        else:
            tags[MODEL_SOURCE_TAG] = f"huggingface:{self.source.repo}"
            tags[PRECISION_TAG] = self.source.precision_path
        return MappingProxyType(tags)


def invoke_url(region: str, name: str) -> str:
    return f"https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{name}/invocations"


@dataclass(frozen=True)
class FitResult:
    usable_gb: float
    needed_gb: float
    precision_path: str


def _needed_gb(repo: HuggingFaceRepo, instance: InstanceType, fit: Fit) -> float:
    return repo.weightsGb + instance.gpus * fit.perGpuOverheadGb.value + fit.minimumCacheGb.value


def _usable_gb(instance: InstanceType, fit: Fit) -> float:
    return instance.gpus * instance.gpuMemoryGb * fit.gpuMemoryUtilization.value


def fits(repo: HuggingFaceRepo, instance: InstanceType, fit: Fit) -> bool:
    return _needed_gb(repo, instance, fit) <= _usable_gb(instance, fit)


def check_fit(
    repo_name: str,
    repo: HuggingFaceRepo,
    instance_type: str,
    instances: Mapping[str, InstanceType],
    lmi: LmiFile,
    key: str,
) -> FitResult:
    """The fit and the precision path the recipe runs, or a `ConfigError` at `key` listing the instance types
    that fit."""
    instance, fit = instances[instance_type], lmi.fit
    usable, needed = _usable_gb(instance, fit), _needed_gb(repo, instance, fit)
    if needed > usable:
        fitting = [name for name, other in instances.items() if fits(repo, other, fit)]
        raise ConfigError(
            key,
            f"{repo_name} ({repo.precision}, ~{repo.weightsGb:g} GB of weights) does not fit "
            f"{instance_type}: {instance.gpus} x {instance.gpuMemoryGb} GB at "
            f"{fit.gpuMemoryUtilization.value:g} = {usable:g} GB usable, {needed:g} GB needed (weights + "
            f"{fit.perGpuOverheadGb.value:g} GB per GPU + {fit.minimumCacheGb.value:g} GB of cache)",
            ", ".join(fitting) or "none of the catalog's instance types",
        )
    return FitResult(usable, needed, repo.runsAs.path)


def pick_container(repo_name: str, repo: HuggingFaceRepo, lmi: LmiFile, key: str) -> Container:
    """The first container (in the data's order of preference) whose bundled vLLM meets the checkpoint's
    minimum, or a `ConfigError` at `key` naming both versions."""
    container = lmi.first_meeting(repo.minimumVllm)
    if container is None:
        newest = lmi.newest()
        raise ConfigError(
            key,
            f"{repo_name} needs vLLM >= {repo.minimumVllm} ({repo.vllmSource.split(',')[0]}); the newest "
            f"container in catalog/sagemaker_lmi.yaml, {newest.release} ({newest.name}), bundles vLLM "
            f"{newest.vllmVersion}",
            "a container whose bundled vLLM meets the minimum, added to catalog/sagemaker_lmi.yaml",
        )
    return container


PROJECT_DIR = PROJECT_DATA_DIR.parent
REGION_KEY = "sagemaker.region"
# The image tag of a listed container whose data file was not read (after its vLLM version, so the tag still
# reads as a version): it renders, and `pulumi up` refuses it.
UNREAD_TAG = "{vllm}-tag-not-read"


class VariantDefaults(NamedTuple):
    """What the model source suggests for the variant where the endpoint config says nothing, and notes."""

    model_data_download_timeout: Optional[int]
    container_startup_health_check_timeout: Optional[int]
    volume_size_gb: Optional[int]
    inference_ami_version: Optional[str]
    notes: tuple[str, ...] = ()


def spec_source(config: SageMakerConfig, region: str, s3_client: Any) -> SpecSource:
    if config.specSource == "s3":
        if s3_client is None:
            s3_client = boto3.client("s3", region_name=region)
        return S3SpecSource(region, s3_client)
    directory = PROJECT_DIR / config.snapshotDir
    if not directory.resolve().is_relative_to(PROJECT_DIR.resolve()) or not directory.is_dir():
        raise ConfigError(
            "sagemaker.snapshotDir",
            f"{bounded(config.snapshotDir)} is not a directory of the project",
            "a path relative to the project root, such as catalog/jumpstart",
        )
    return SnapshotSpecSource(directory)


def jumpstart_model(
    endpoint: SageMakerEndpointConfig,
    path: str,
    region: str,
    source: SpecSource,
    allow_unverified: bool,
) -> tuple[ModelContainer, ModelSource, str, VariantDefaults]:
    model = endpoint.jumpstart
    assert model is not None  # checked by check_sagemaker
    keys = ConfigKeys(
        model_id=f"{path}.jumpstart.modelId",
        version=f"{path}.jumpstart.version",
        instance_type=f"{path}.instanceType",
        accept_eula=f"{path}.jumpstart.acceptEula",
        spec=f"{path}.jumpstart",
        region=REGION_KEY,
    )
    resolved = resolve_jumpstart_model(
        model.modelId,
        model.version,
        region,
        endpoint.instanceType,
        accept_eula=model.acceptEula,
        source=source,
        keys=keys,
        allow_unverified=allow_unverified,
    )
    container = ModelContainer(
        image=resolved.image_uri,
        environment=resolved.environment,
        model_data=resolved.model_data_source,
        additional_model_data=resolved.additional_model_data_sources,
        enable_network_isolation=resolved.enable_network_isolation,
        needs_hf_token=False,
    )
    defaults = VariantDefaults(
        resolved.model_data_download_timeout,
        resolved.container_startup_health_check_timeout,
        resolved.volume_size_gb,
        None,
    )
    provenance = resolved.provenance.label() if resolved.provenance is not None else None
    return container, JumpStartSource(model.modelId, model.version, provenance), model.modelId, defaults


def huggingface_model(
    endpoint: SageMakerEndpointConfig,
    path: str,
    region: str,
    facts: Facts,
) -> tuple[ModelContainer, ModelSource, str, VariantDefaults]:
    """The first container whose vLLM meets the checkpoint's minimum, given the recipe's engine arguments in
    the form that container reads. `lmiImage` (an LMI image of one's own) brings its own vLLM."""
    model = endpoint.huggingface
    assert model is not None  # checked by check_sagemaker
    lmi = facts.lmi
    repo = lmi.repositories[model.repo]
    instance = facts.sagemaker_instances[endpoint.instanceType]
    own_image = model.lmiImage is not None
    chosen = None if own_image else pick_container(model.repo, repo, lmi, f"{path}.huggingface.repo")
    form = lmi.argumentForms[chosen.argumentForm if chosen else "lmi"]
    placeholders: tuple[Placeholder, ...] = ()
    if model.lmiImage is not None:
        image = model.lmiImage
    else:
        assert chosen is not None
        registry = lmi.registry(region)
        if registry is None:
            regions = ", ".join(lmi.registries.accounts)
            raise ConfigError(
                f"{path}.huggingface.lmiImage",
                f"no Deep Learning Containers registry for {region!r} in catalog/sagemaker_lmi.yaml",
                f"a region listed there ({regions}), or an image",
            )
        tag = chosen.tag or UNREAD_TAG.format(vllm=chosen.vllmVersion)
        image = f"{registry}/{chosen.repository}:{tag}"
        if chosen.tag is None:
            placeholders = (
                Placeholder(
                    f"catalog/sagemaker_lmi.yaml containers[{lmi.containers.index(chosen)}].tag",
                    tag,
                    f"{chosen.release}'s image tag was not read ({chosen.source.split(' (')[0]})",
                    "the tag that data file names",
                ),
            )
    for option in model.options:
        if not option.startswith(form.prefix):
            raise ConfigError(
                f"{path}.huggingface.options.{option}",
                f"the container ({chosen.release if chosen else 'lmiImage'}) reads {form.prefix}* settings",
                f"{form.prefix}<NAME>",
            )
    fit = check_fit(model.repo, repo, endpoint.instanceType, facts.sagemaker_instances, lmi, f"{path}.instanceType")
    image_region = image.split(".")[3]
    if image_region != region:
        raise ConfigError(
            f"{path}.huggingface.lmiImage",
            f"{image!r} is in {image_region}, the endpoint in {region}; "
            "SageMaker pulls only from ECR in the endpoint's region",
            f"an image in {region}",
        )
    arguments = repo.engineArguments.for_architecture(instance.gpuArchitecture)
    parallel = form.tensorParallel
    planned = {
        **form.environment,
        **form.environment_of(arguments),
        parallel.variable: "max" if parallel.value == "max" else str(instance.gpus),
        form.modelVariable: model.repo,
    }
    _check_options(model.options, planned, instance.gpus, f"{path}.huggingface.options")
    environment = {**planned, **model.options}
    staged, staging = model.modelData, lmi.s3ModelData
    if staged is not None:  # the weights on local disk: loaded from there under the repo's name, offline
        key_region = staged.kmsKeyArn.split(":")[3] if staged.kmsKeyArn else region
        if key_region != region:
            raise ConfigError(
                f"{path}.huggingface.modelData.kmsKeyArn",
                f"the key is in {key_region}, the endpoint in {region}: SageMaker reads model data only from "
                "its own region",
                f"a key in {region}",
            )
        served_name = form.variable("--served-model-name")
        if served_name in model.options:
            raise ConfigError(
                f"{path}.huggingface.options.{served_name}",
                "the served model name is the repo's (the gateway and clients call it by that name)",
                "remove it",
            )
        environment |= {form.modelVariable: staging.localPath, served_name: model.repo, **staging.environment}
    _check_environment(environment, model.sendHfToken, lmi.environmentLimits, f"{path}.huggingface.options")
    container = ModelContainer(
        image=image,
        environment=MappingProxyType(environment),
        model_data=S3ModelData(staged.s3Uri, "S3Prefix", "None") if staged else None,
        additional_model_data=(),
        enable_network_isolation=staged is not None,
        needs_hf_token=model.sendHfToken,
        model_data_kms_key=staged.kmsKeyArn if staged else None,
    )
    unverified = repo.engineArguments.unverified_on(instance.gpuArchitecture)
    notes = tuple(
        f"{endpoint.name}: the vLLM recipe of {model.repo} requires {what}; UNVERIFIED, not passed: check the "
        "endpoint's health before shifting traffic to it"
        for what in unverified
    )
    # The AMI goes with the listed containers; an image of one's own brings its own requirements.
    defaults = VariantDefaults(
        staging.downloadTimeoutSeconds if staged else lmi.timeouts.modelDataDownload,
        lmi.timeouts.containerStartupHealthCheck,
        lmi.volumeSizeGb,
        None if own_image else lmi.inferenceAmiVersion,
        notes,
    )
    source = HuggingFaceSource(
        model.repo,
        pinned_image=not own_image,
        precision_path=fit.precision_path,
        container=chosen.name if chosen else None,
        vllm_version=chosen.vllmVersion if chosen else None,
        minimum_vllm=repo.minimumVllm,
        engine_arguments=MappingProxyType(dict(arguments)),
        placeholders=placeholders,
    )
    return container, source, model.repo, defaults


def _check_environment(environment: dict[str, str], hf_token: bool, limits: EnvironmentLimits, key: str) -> None:
    """The container environment fits what CreateModel accepts (catalog/sagemaker_lmi.yaml environmentLimits)."""
    entries = len(environment) + (1 if hf_token and "HF_TOKEN" not in environment else 0)
    if entries > limits.maxEntries:
        raise ConfigError(
            key,
            f"the model's container environment would hold {entries} entries (the LMI defaults, the repository's "
            f"and these options, HF_MODEL_ID{', HF_TOKEN' if hf_token else ''}); SageMaker accepts "
            f"{limits.maxEntries} ({limits.source})",
            f"{entries - limits.maxEntries} fewer options",
        )
    for name, value in environment.items():
        if len(name) > limits.maxKeyLength or len(str(value)) > limits.maxValueLength:
            raise ConfigError(
                f"{key}.{name}" if len(name) <= 64 else key,
                f"{'name' if len(name) > limits.maxKeyLength else 'value'} longer than "
                f"{limits.maxKeyLength if len(name) > limits.maxKeyLength else limits.maxValueLength} characters",
                f"SageMaker's limit ({limits.source})",
            )


PROVIDER_INSERVICE_WAIT_SECONDS = 3600


def wait_budget(
    variant: ProductionVariant,
    deployment: BlueGreen,
    provisioning: int,
    has_model_data: bool,
) -> WaitBudget:
    return WaitBudget(
        provisioning=provisioning,
        model_download=(variant.model_data_download_timeout or 0) if has_model_data else 0,
        startup=variant.container_startup_health_check_timeout or 0,
        traffic_shifting=deployment.traffic_steps * deployment.wait_interval_seconds,
        termination=deployment.termination_wait_seconds,
    )


def _parts(budget: WaitBudget, update: bool) -> str:
    parts = [f"{budget.provisioning} s provisioning (estimate)"]
    if budget.model_download:
        parts.append(f"{budget.model_download} s model download timeout")
    parts.append(f"{budget.startup} s startup health-check timeout")
    if update:
        parts += [f"{budget.traffic_shifting} s of bakes", f"{budget.termination} s termination wait"]
    return " + ".join(parts)


def check_waits(budget: WaitBudget, deployment: BlueGreen, path: str) -> list[ConfigError]:
    """Every way the waits do not fit, each naming the key to change."""
    limit = PROVIDER_INSERVICE_WAIT_SECONDS
    wait = f"the provider's fixed {limit} s InService wait"
    errors = []
    if budget.create_seconds > limit:
        errors.append(
            ConfigError(
                f"{path}.timeouts",
                f"a create can take {_parts(budget, False)} = {budget.create_seconds} s, longer than {wait}",
                f"timeouts summing to at most {limit - budget.provisioning} s",
            )
        )
        return errors
    if budget.update_seconds > limit:
        errors.append(
            ConfigError(
                f"{path}.deployment",
                f"a blue/green update can take {_parts(budget, True)} = {budget.update_seconds} s, longer than {wait}",
                f"waitIntervalSeconds x {deployment.traffic_steps} traffic steps + "
                f"terminationWaitSeconds <= {limit - budget.create_seconds} s, or shorter timeouts",
            )
        )
    maximum = deployment.maximum_execution_timeout_seconds
    key = f"{path}.deployment.maximumExecutionTimeoutSeconds"
    if maximum > limit:
        errors.append(
            ConfigError(
                key,
                f"{maximum} s outlasts {wait}: `up` would give up while SageMaker still deploys",
                f"{min(budget.update_seconds, limit)}..{limit}",
            )
        )
    elif budget.update_seconds <= limit and maximum < budget.update_seconds:
        errors.append(
            ConfigError(
                key,
                f"{maximum} s is shorter than the worst-case update "
                f"({budget.update_seconds} s): SageMaker would roll back a slow but healthy "
                "deployment",
                f"{budget.update_seconds}..{limit}",
            )
        )
    return errors


def _check_source(endpoint: SageMakerEndpointConfig, path: str, lmi: LmiFile) -> list[ConfigError]:
    errors = []
    chosen, other = ("jumpstart", "huggingface") if endpoint.source == "jumpstart" else ("huggingface", "jumpstart")
    if getattr(endpoint, chosen) is None:
        errors.append(ConfigError(f"{path}.{chosen}", f"required when source is {chosen}"))
    if getattr(endpoint, other) is not None:
        errors.append(
            ConfigError(f"{path}.{other}", f"set only when source is {other}", f"remove it, or source: {other}")
        )
    model = endpoint.huggingface
    if endpoint.source == "huggingface" and model is not None:
        repositories = lmi.repositories
        if model.repo not in repositories:
            errors.append(
                ConfigError(
                    f"{path}.huggingface.repo", f"unsupported checkpoint {bounded(model.repo)}", ", ".join(repositories)
                )
            )
        if model.modelData is not None and model.sendHfToken:
            errors.append(
                ConfigError(
                    f"{path}.huggingface.sendHfToken",
                    "the weights come from modelData (S3): the container never reads the Hub, and a token in its "
                    "environment only exposes it",
                    "false",
                )
            )
        for option in model.options:
            if not CONTAINER_SETTING.fullmatch(option):
                errors.append(
                    ConfigError(
                        f"{path}.huggingface.options.{option}",
                        "not a container setting",
                        "OPTION_* (LMI) or SM_VLLM_* (SageMaker vLLM) names (the token comes from the hfToken secret)",
                    )
                )
    return errors


def _check_options(options: Mapping[str, str], planned: Mapping[str, str], gpus: int, path: str) -> None:
    """Options add engine settings; they never replace one the plan derives from the recipe and the instance
    (the model, the tensor parallelism, the recipe's arguments), and the parallel sizes they add (pipeline,
    data) times the planned tensor parallelism fit the instance's GPUs."""
    for option, value in options.items():
        if option in planned:
            raise ConfigError(
                f"{path}.{option}",
                f"replaces the plan's value {bounded(planned[option])} (from the recipe and the instance) with "
                f"{bounded(value)}",
                "remove it: options add settings the plan does not set",
            )
    ranks = 1
    for option, value in options.items():
        if option.endswith("_PARALLEL_SIZE"):
            if not value.isdigit() or int(value) < 1:
                raise ConfigError(f"{path}.{option}", f"{bounded(value)} is not a positive count")
            ranks *= int(value)
    if ranks > 1:
        raise ConfigError(
            f"{path}.{next(o for o in options if o.endswith('_PARALLEL_SIZE'))}",
            f"{ranks} more ranks per tensor-parallel group than one instance runs: the plan spreads the model "
            f"over the instance's {gpus} GPU(s) with tensor parallelism",
            "remove it, or an instance type with the GPUs the model needs",
        )


def _check_autoscaling_guard(endpoint: SageMakerEndpointConfig, path: str) -> list[ConfigError]:
    """An instance-type change of a registered variant fails UpdateEndpoint: make it a two-step change."""
    scaling = endpoint.autoscaling
    if not scaling.enabled or scaling.instanceType == endpoint.instanceType:
        return []
    return [
        ConfigError(
            f"{path}.autoscaling.instanceType",
            f"autoscaling is registered for {scaling.instanceType}, the endpoint asks for "
            f"{endpoint.instanceType}: SageMaker refuses to change the instance type of a variant that is "
            "a scaling target",
            f"{endpoint.instanceType} after a `pulumi up` with autoscaling.enabled: "
            "false (docs/sagemaker.md, Changing the instance type)",
        )
    ]


def _check_bake(endpoint: SageMakerEndpointConfig, path: str) -> list[ConfigError]:
    """A bake shorter than the alarms' evaluation window cannot roll anything back."""
    deployment = endpoint.deployment
    alarms = deployment.rollbackAlarms
    window = alarms.periodSeconds * alarms.evaluationPeriods
    if deployment.waitIntervalSeconds >= window:
        return []
    return [
        ConfigError(
            f"{path}.deployment.waitIntervalSeconds",
            f"{deployment.waitIntervalSeconds} s of baking is shorter than the rollback alarms' window "
            f"(periodSeconds {alarms.periodSeconds} x evaluationPeriods {alarms.evaluationPeriods} = "
            f"{window} s): no alarm could trip before the next traffic shift",
            f">= {window}",
        )
    ]


def _check_capacity(
    endpoint: SageMakerEndpointConfig,
    path: str,
    instances: Mapping[str, InstanceType],
) -> list[ConfigError]:
    errors = []
    scaling = endpoint.autoscaling
    if scaling.minCapacity > scaling.maxCapacity:
        errors.append(
            ConfigError(
                f"{path}.autoscaling.minCapacity",
                f"{scaling.minCapacity} is greater than maxCapacity {scaling.maxCapacity}",
            )
        )
    elif not scaling.minCapacity <= endpoint.initialInstanceCount <= scaling.maxCapacity:
        errors.append(
            ConfigError(
                f"{path}.initialInstanceCount",
                f"{endpoint.initialInstanceCount} is outside autoscaling",
                f"{scaling.minCapacity}..{scaling.maxCapacity}",
            )
        )
    if scaling.scaleInCooldown <= scaling.scaleOutCooldown:
        errors.append(
            ConfigError(
                f"{path}.autoscaling.scaleInCooldown",
                f"{scaling.scaleInCooldown} s is not longer than scaleOutCooldown "
                f"{scaling.scaleOutCooldown} s, so the endpoint could flap",
                f"more than {scaling.scaleOutCooldown}",
            )
        )
    instance = instances.get(endpoint.instanceType)
    if instance is None:
        errors.append(
            ConfigError(
                f"{path}.instanceType",
                f"unsupported instance type {bounded(endpoint.instanceType)}",
                ", ".join(instances),
            )
        )
    elif instance.storage == "nvme":
        if endpoint.volumeSizeGb is not None:
            errors.append(
                ConfigError(
                    f"{path}.volumeSizeGb",
                    f"{endpoint.instanceType} has local NVMe storage only, where SageMaker rejects a volume size",
                    "unset",
                )
            )
        if endpoint.kmsKeyArn is not None and not endpoint.dataCapture.enabled:
            errors.append(
                ConfigError(
                    f"{path}.kmsKeyArn",
                    f"{endpoint.instanceType} storage is hardware-encrypted "
                    "NVMe, where SageMaker rejects a volume key, and data capture is off",
                    "unset, or enable dataCapture",
                )
            )
    return errors


def check_sagemaker(config: SageMakerConfig, facts: Facts, prefix: str = "sagemaker") -> list[ConfigError]:
    """Every problem across the endpoints, each with its key path (the region-free checks)."""
    errors: list[ConfigError] = []
    seen: set[str] = set()
    for index, endpoint in enumerate(config.endpoints):
        path = f"{prefix}.endpoints[{index}]"
        if endpoint.name in seen:
            errors.append(ConfigError(f"{path}.name", f"endpoint name {endpoint.name!r} is used twice"))
        seen.add(endpoint.name)
        errors += _check_source(endpoint, path, facts.lmi)
        errors += _check_capacity(endpoint, path, facts.sagemaker_instances)
        errors += _check_autoscaling_guard(endpoint, path)
        errors += _check_bake(endpoint, path)
    return errors


def _timeout(configured: Optional[int], default: Optional[int], key: str) -> Optional[int]:
    """The configured timeout, else the default, which must also fit SageMaker's 60..3600."""
    if configured is not None or default is None:
        return configured
    if not 60 <= default <= 3600:
        raise ConfigError(key, f"the model's default of {default} s is outside what SageMaker accepts", "set 60..3600")
    return default


def _traffic_shifting(
    endpoint: SageMakerEndpointConfig, path: str
) -> tuple[Literal["CANARY", "LINEAR", "ALL_AT_ONCE"], Optional[str]]:
    """The traffic-shifting mode, valid for the variant's instance count: a canary or a linear step may move at
    most half the instances (SageMaker TrafficRoutingConfig; sizes round up to whole instances). Unset means
    CANARY where it fits, else ALL_AT_ONCE with the reason; a configured mode that does not fit is refused."""
    deployment, count = endpoint.deployment, endpoint.initialInstanceCount
    size_key, percent = (
        ("linearStepSize", deployment.linearStepSize)
        if deployment.type == "LINEAR"
        else ("canarySize", deployment.canarySize)
    )
    moved = shifted_instances(count, percent)
    fits = 2 * moved <= count
    if deployment.type is None:
        if fits:
            return "CANARY", None
        return "ALL_AT_ONCE", (
            f"{endpoint.name}: blue/green ALL_AT_ONCE: a {percent}% canary of {count} instance(s) moves {moved}, more "
            "than the half SageMaker allows; the rollback alarms still bake over the new fleet before the old one "
            "is terminated (set initialInstanceCount >= 2 for a canary)"
        )
    if deployment.type == "ALL_AT_ONCE" or fits:
        return deployment.type, None
    most = max((p for p in range(1, 51) if 2 * shifted_instances(count, p) <= count), default=None)
    raise ConfigError(
        f"{path}.deployment.{size_key}",
        f"{percent}% of {count} instance(s) moves {moved}, more than the half of the instance count SageMaker allows "
        f"for a {deployment.type} step",
        f"at most {most}%" if most else "type ALL_AT_ONCE, or initialInstanceCount >= 2",
    )


def _plan_one(
    endpoint: SageMakerEndpointConfig,
    path: str,
    region: str,
    source: Optional[SpecSource],
    facts: Facts,
    allow_unverified: bool,
) -> PlannedEndpoint:
    if endpoint.source == "jumpstart":
        assert source is not None
        container, model_source, served_model, defaults = jumpstart_model(
            endpoint, path, region, source, allow_unverified
        )
    else:
        container, model_source, served_model, defaults = huggingface_model(endpoint, path, region, facts)
    timeouts = endpoint.timeouts
    instance = facts.sagemaker_instances[endpoint.instanceType]
    ebs = instance.storage == "ebs"
    variant = ProductionVariant(
        name=endpoint.variantName,
        instance_type=endpoint.instanceType,
        initial_instance_count=endpoint.initialInstanceCount,
        model_data_download_timeout=_timeout(
            timeouts.modelDataDownload, defaults.model_data_download_timeout, f"{path}.timeouts.modelDataDownload"
        ),
        container_startup_health_check_timeout=_timeout(
            timeouts.containerStartupHealthCheck,
            defaults.container_startup_health_check_timeout,
            f"{path}.timeouts.containerStartupHealthCheck",
        ),
        volume_size_gb=(endpoint.volumeSizeGb if endpoint.volumeSizeGb is not None else defaults.volume_size_gb)
        if ebs
        else None,
        ebs_storage=ebs,
        inference_ami_version=defaults.inference_ami_version,
    )
    price = instance.hourlyUsd
    contract = ServingEndpoint(
        id=endpoint.name,
        kind="sagemaker",
        servedModelName=served_model,
        url=invoke_url(region, endpoint.name),
        gpus=instance.gpus * endpoint.initialInstanceCount,
        region=region,
        variant=endpoint.variantName,
        instanceType=endpoint.instanceType,
        instanceCount=endpoint.initialInstanceCount,
        usdPerHour=round(price * endpoint.initialInstanceCount, 4) if price is not None else None,
    )
    key_region = endpoint.kmsKeyArn.split(":")[3] if endpoint.kmsKeyArn else region
    if key_region != region:
        raise ConfigError(
            f"{path}.kmsKeyArn",
            f"the key is in {key_region}, the endpoint in {region}: SageMaker uses only a KMS key of the endpoint's "
            "region for its storage and data capture",
            f"a key in {region}",
        )
    shifting, shifting_note = _traffic_shifting(endpoint, path)
    deployment = BlueGreen.of(endpoint.deployment, shifting)
    has_model_data = container.model_data is not None or bool(container.additional_model_data)
    waits = wait_budget(variant, deployment, int(facts.sagemaker_provisioning.value), has_model_data)
    wait_errors = check_waits(waits, deployment, path)
    if wait_errors:
        raise ConfigError.combined(wait_errors)
    return PlannedEndpoint(
        name=endpoint.name,
        region=region,
        source=model_source,
        container=container,
        variant=variant,
        scaling=endpoint.autoscaling,
        deployment=deployment,
        data_capture=endpoint.dataCapture,
        kms_key_arn=endpoint.kmsKeyArn,
        endpoint=contract,
        waits=waits,
        notes=defaults.notes + ((shifting_note,) if shifting_note else ()),
    )


def plan_sagemaker_endpoints(
    config: StackConfig,
    facts: Facts,
    *,
    default_region: Optional[str] = None,
    source: Optional[SpecSource] = None,
    s3_client: Any = None,
) -> list[PlannedEndpoint]:
    """Plan every configured endpoint, or raise one `ConfigError` naming each bad key.

    `default_region` is the stack's `aws:region` (used when `sagemaker.region` is unset); `source`
    replaces the configured spec source (tests), `s3_client` the client of `specSource: s3`.
    """
    sagemaker = config.sagemaker
    if not sagemaker.endpoints:
        return []
    region = sagemaker.region if sagemaker.region is not None else default_region
    if not region:
        raise ConfigError(REGION_KEY, "no region for the SageMaker endpoints", "set sagemaker.region or aws:region")
    needs_specs = any(endpoint.source == "jumpstart" for endpoint in sagemaker.endpoints)
    if needs_specs and source is None:
        source = spec_source(sagemaker, region, s3_client)
    planned: list[PlannedEndpoint] = []
    errors: list[ConfigError] = []
    for index, endpoint in enumerate(sagemaker.endpoints):
        try:
            planned.append(
                _plan_one(
                    endpoint, f"sagemaker.endpoints[{index}]", region, source, facts, sagemaker.allowUnverifiedSpecs
                )
            )
        except ConfigError as error:
            in_snapshot = sagemaker.specSource == "snapshot" and error.key_path.startswith(
                sagemaker.snapshotDir.rstrip("/") + "/"
            )  # a file of the snapshot the key names: the key leads, the file follows
            errors.append(ConfigError("sagemaker.snapshotDir", str(error)) if in_snapshot else error)
        except (OSError, json.JSONDecodeError) as error:  # a snapshot directory without the bucket's layout
            if sagemaker.specSource != "snapshot":
                raise
            problem = f"cannot read the JumpStart snapshot: {type(error).__name__}"
            if isinstance(error, OSError) and error.filename:
                problem += f" ({bounded(Path(error.filename).name)})"
            errors.append(
                ConfigError("sagemaker.snapshotDir", problem, "a copy made by tools/refresh_jumpstart_snapshot.py")
            )
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigError.combined(errors)
    return planned
