"""From the `sagemaker` config block to what each SageMaker endpoint deploys (`PlannedEndpoint`, the
`SageMakerEndpoint` component's input), as plain values: pure, and run before any resource is registered, so
every value the component sets is concrete at preview and a bad setting fails with its key path.

- The model: a pinned JumpStart model (its spec from the committed snapshot or the content bucket,
  `specSource`) or a Hugging Face repo on the pinned LMI image of `catalog/sagemaker_lmi.yaml`.
- The fit: tensor parallelism spreads the weights over every GPU of the instance, so the budget is the
  instance's GPU memory at vLLM's utilization minus a per-GPU overhead, and what remains after the weights must
  hold a minimum cache (numbers: the LMI file's `fit`).
- The waits: the Terraform provider behind pulumi-aws waits for InService after CreateEndpoint and
  UpdateEndpoint with a fixed 60-minute waiter (aws-sdk-go `WaitUntilEndpointInService`: 120 x 30 s). Worst
  case = instance provisioning (data) + the model download timeout (with S3 model data) + the container startup
  health-check timeout, and for an update + one bake per traffic shift + `terminationWaitSeconds`; SageMaker
  stops a deployment at `maximumExecutionTimeoutSeconds` and rolls it back, so that must cover the update and
  stay within the provider's wait.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Optional, Union

import boto3

from serving_stack.config.sagemaker import (
    CONTAINER_SETTING,
    Deployment,
    SageMakerConfig,
    SageMakerEndpointConfig,
)
from serving_stack.config.stack import StackConfig
from serving_stack.contract.outputs import ServingEndpoint
from serving_stack.errors import ConfigError, Problems, bounded
from serving_stack.facts import Facts
from serving_stack.facts.aws import version_key
from serving_stack.facts.sagemaker import (
    ConfigKeys,
    Container,
    EnvironmentLimits,
    HuggingFaceRepo,
    LmiFile,
    ModelContainer,
    S3ModelData,
    S3SpecSource,
    SnapshotSpecSource,
    SpecSource,
    VariantDefaults,
    resolve_jumpstart_model,
)
from serving_stack.facts.strict_files import PROJECT_DIR
from serving_stack.plan.placeholders import Placeholder

# Tags on the endpoint's model, config and endpoint: what it serves and from what, readable in AWS, by the
# cleanup of retained configs (docs/sagemaker.md) and by `summary.md`.
ENDPOINT_TAG = "nemotron.nvidia.com/sagemaker-endpoint"
MODEL_SOURCE_TAG = "nemotron.nvidia.com/model-source"
SPEC_PROVENANCE_TAG = "nemotron.nvidia.com/jumpstart-spec"
PRECISION_TAG = "nemotron.nvidia.com/precision"
UNVERIFIED = "unverified"
PROVIDER_INSERVICE_WAIT_SECONDS = 3600
REGION_KEY = "sagemaker.region"
Shifting = Literal["CANARY", "LINEAR", "ALL_AT_ONCE"]


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
    precision_path: str
    container: Optional[str] = None
    vllm_version: Optional[str] = None
    minimum_vllm: Optional[str] = None
    engine_arguments: Mapping[str, Optional[str]] = field(default_factory=lambda: MappingProxyType({}))
    placeholders: tuple[Placeholder, ...] = ()


ModelSource = Union[JumpStartSource, HuggingFaceSource]


@dataclass(frozen=True)
class ProductionVariant:
    """The variant's resolved settings; its name, instance type and count are the endpoint config's."""

    model_data_download_timeout: Optional[int]
    container_startup_health_check_timeout: Optional[int]
    volume_size_gb: Optional[int]
    ebs_storage: bool
    inference_ami_version: Optional[str]


def traffic_steps(shifting: Shifting, deployment: Deployment) -> int:
    """Traffic shifts, each followed by a bake of `waitIntervalSeconds` (an upper bound for CANARY)."""
    if shifting == "LINEAR":
        return math.ceil(100 / deployment.linearStepSize)
    return 2 if shifting == "CANARY" else 1


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
    config: SageMakerEndpointConfig  # the endpoint block as configured (name, variant, autoscaling, capture, key)
    shifting: Shifting  # the blue/green traffic-shifting mode decided for `config.deployment`
    endpoint: ServingEndpoint
    waits: WaitBudget
    notes: tuple[str, ...] = ()

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


def shifted_instances(instances: int, percent: int) -> int:
    """Instances a capacity-percent step moves: SageMaker rounds up to whole instances."""
    return math.ceil(instances * percent / 100)


def check_fit(repo_name: str, repo: HuggingFaceRepo, instance_type: str, facts: Facts, key: str) -> None:
    """A `ConfigError` at `key` listing the instance types that fit, when the checkpoint does not fit."""
    fit = facts.lmi.fit

    def sizes(name: str) -> tuple[float, float]:
        instance = facts.sagemaker_instances[name]
        usable = instance.gpus * instance.gpuMemoryGb * fit.gpuMemoryUtilization.value
        return usable, repo.weightsGb + instance.gpus * fit.perGpuOverheadGb.value + fit.minimumCacheGb.value

    (usable, needed), instance = sizes(instance_type), facts.sagemaker_instances[instance_type]
    if needed > usable:
        fitting = [name for name in facts.sagemaker_instances if (other := sizes(name))[1] <= other[0]]
        raise ConfigError(
            key,
            f"{repo_name} ({repo.precision}, ~{repo.weightsGb:g} GB of weights) does not fit "
            f"{instance_type}: {instance.gpus} x {instance.gpuMemoryGb} GB at "
            f"{fit.gpuMemoryUtilization.value:g} = {usable:g} GB usable, {needed:g} GB needed (weights + "
            f"{fit.perGpuOverheadGb.value:g} GB per GPU + {fit.minimumCacheGb.value:g} GB of cache)",
            ", ".join(fitting) or "none of the catalog's instance types",
        )


def pick_container(repo_name: str, repo: HuggingFaceRepo, lmi: LmiFile, key: str) -> Container:
    """The first container (in the data's order of preference) whose bundled vLLM meets the checkpoint's
    minimum, or a `ConfigError` at `key` naming both versions."""
    minimum = version_key(repo.minimumVllm)
    container = next((c for c in lmi.containers if version_key(c.vllmVersion) >= minimum), None)
    if container is None:
        newest = max(lmi.containers, key=lambda c: version_key(c.vllmVersion))
        raise ConfigError(
            key,
            f"{repo_name} needs vLLM >= {repo.minimumVllm} ({repo.vllmSource.split(',')[0]}); the newest "
            f"container in catalog/sagemaker_lmi.yaml, {newest.release} ({newest.name}), bundles vLLM "
            f"{newest.vllmVersion}",
            "a container whose bundled vLLM meets the minimum, added to catalog/sagemaker_lmi.yaml",
        )
    return container


def spec_source(config: SageMakerConfig, region: str, s3_client: Any) -> SpecSource:
    if config.specSource == "s3":
        return S3SpecSource(region, s3_client or boto3.client("s3", region_name=region))
    directory = PROJECT_DIR / config.snapshotDir
    if not directory.resolve().is_relative_to(PROJECT_DIR.resolve()) or not directory.is_dir():
        raise ConfigError(
            "sagemaker.snapshotDir",
            f"{bounded(config.snapshotDir)} is not a directory of the project",
            "a path relative to the project root, such as catalog/jumpstart",
        )
    return SnapshotSpecSource(directory)


def jumpstart_model(
    endpoint: SageMakerEndpointConfig, path: str, region: str, source: SpecSource, allow_unverified: bool
) -> tuple[ModelContainer, ModelSource, VariantDefaults]:
    model = endpoint.jumpstart
    assert model is not None  # checked by check_sagemaker
    keys = replace(ConfigKeys.under(f"{path}.jumpstart"), instance_type=f"{path}.instanceType", region=REGION_KEY)
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
    provenance = resolved.provenance.label() if resolved.provenance is not None else None
    return resolved.container, JumpStartSource(model.modelId, model.version, provenance), resolved.defaults


def _check_key_region(kms_key_arn: Optional[str], region: str, key: str, why: str) -> None:
    key_region = kms_key_arn.split(":")[3] if kms_key_arn else region
    if key_region != region:
        raise ConfigError(key, f"the key is in {key_region}, the endpoint in {region}: {why}", f"a key in {region}")


def huggingface_model(
    endpoint: SageMakerEndpointConfig, path: str, region: str, facts: Facts
) -> tuple[ModelContainer, ModelSource, VariantDefaults]:
    """The first container whose vLLM meets the checkpoint's minimum, given the recipe's engine arguments in
    the form that container reads. `lmiImage` (an LMI image of one's own) brings its own vLLM."""
    model, lmi = endpoint.huggingface, facts.lmi
    assert model is not None  # checked by check_sagemaker
    repo, instance = lmi.repositories[model.repo], facts.sagemaker_instances[endpoint.instanceType]
    chosen = None if model.lmiImage else pick_container(model.repo, repo, lmi, f"{path}.huggingface.repo")
    form = lmi.argumentForms[chosen.argumentForm if chosen else "lmi"]
    placeholders: tuple[Placeholder, ...] = ()
    image = model.lmiImage
    if chosen is not None:
        image = lmi.image(chosen, region)
        if image is None:
            raise ConfigError(
                f"{path}.huggingface.lmiImage",
                f"no Deep Learning Containers registry for {region!r} in catalog/sagemaker_lmi.yaml",
                f"a region listed there ({', '.join(lmi.registries.accounts)}), or an image",
            )
        if chosen.tag is None:
            placeholders = (
                Placeholder(
                    f"catalog/sagemaker_lmi.yaml containers[{lmi.containers.index(chosen)}].tag",
                    image.rpartition(":")[2],
                    f"{chosen.release}'s image tag was not read ({chosen.source.split(' (')[0]})",
                    "the tag that data file names",
                ),
            )
    assert image is not None
    options_key = f"{path}.huggingface.options"
    for option in model.options:
        if not option.startswith(form.prefix):
            raise ConfigError(
                f"{options_key}.{option}",
                f"the container ({chosen.release if chosen else 'lmiImage'}) reads {form.prefix}* settings",
                f"{form.prefix}<NAME>",
            )
    check_fit(model.repo, repo, endpoint.instanceType, facts, f"{path}.instanceType")
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
    _check_options(model.options, planned, instance.gpus, options_key)
    environment = {**planned, **model.options}
    staged, staging = model.modelData, lmi.s3ModelData
    if staged is not None:  # the weights on local disk: loaded from there under the repo's name, offline
        why = "SageMaker reads model data only from its own region"
        _check_key_region(staged.kmsKeyArn, region, f"{path}.huggingface.modelData.kmsKeyArn", why)
        served_name = form.variable("--served-model-name")
        if served_name in model.options:
            raise ConfigError(
                f"{options_key}.{served_name}",
                "the served model name is the repo's (the gateway and clients call it by that name)",
                "remove it",
            )
        environment |= {form.modelVariable: staging.localPath, served_name: model.repo, **staging.environment}
    _check_environment(environment, model.sendHfToken, lmi.environmentLimits, options_key)
    container = ModelContainer(
        image=image,
        environment=MappingProxyType(environment),
        model_data=S3ModelData.at(staged.s3Uri) if staged else None,
        additional_model_data=(),
        enable_network_isolation=staged is not None,
        needs_hf_token=model.sendHfToken,
        model_data_kms_key=staged.kmsKeyArn if staged else None,
    )
    notes = tuple(
        f"{endpoint.name}: the vLLM recipe of {model.repo} requires {what}; UNVERIFIED, not passed: check the "
        "endpoint's health before shifting traffic to it"
        for what in repo.engineArguments.unverified_on(instance.gpuArchitecture)
    )
    # The AMI goes with the listed containers; an image of one's own brings its own requirements.
    defaults = VariantDefaults(
        staging.downloadTimeoutSeconds if staged else lmi.timeouts.modelDataDownload,
        lmi.timeouts.containerStartupHealthCheck,
        lmi.volumeSizeGb,
        lmi.inferenceAmiVersion if chosen else None,
        notes,
    )
    source = HuggingFaceSource(
        model.repo,
        precision_path=repo.runsAs.path,
        container=chosen.name if chosen else None,
        vllm_version=chosen.vllmVersion if chosen else None,
        minimum_vllm=repo.minimumVllm,
        engine_arguments=MappingProxyType(dict(arguments)),
        placeholders=placeholders,
    )
    return container, source, defaults


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
        long_name = len(name) > limits.maxKeyLength
        if long_name or len(str(value)) > limits.maxValueLength:
            raise ConfigError(
                f"{key}.{name}" if len(name) <= 64 else key,
                f"{'name' if long_name else 'value'} longer than "
                f"{limits.maxKeyLength if long_name else limits.maxValueLength} characters",
                f"SageMaker's limit ({limits.source})",
            )


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
    parallel = {option: value for option, value in options.items() if option.endswith("_PARALLEL_SIZE")}
    for option, value in parallel.items():
        if not value.isdigit() or int(value) < 1:
            raise ConfigError(f"{path}.{option}", f"{bounded(value)} is not a positive count")
    ranks = math.prod(int(value) for value in parallel.values())
    if ranks > 1:
        raise ConfigError(
            f"{path}.{next(iter(parallel))}",
            f"{ranks} more ranks per tensor-parallel group than one instance runs: the plan spreads the model "
            f"over the instance's {gpus} GPU(s) with tensor parallelism",
            "remove it, or an instance type with the GPUs the model needs",
        )


def _wait_parts(budget: WaitBudget, update: bool) -> str:
    parts = [f"{budget.provisioning} s provisioning (estimate)"]
    if budget.model_download:
        parts.append(f"{budget.model_download} s model download timeout")
    parts.append(f"{budget.startup} s startup health-check timeout")
    if update:
        parts += [f"{budget.traffic_shifting} s of bakes", f"{budget.termination} s termination wait"]
    return " + ".join(parts)


def check_waits(budget: WaitBudget, shifting: Shifting, deployment: Deployment, path: str) -> None:
    """Every way the waits do not fit, each naming the key to change, raised together."""
    limit, errors = PROVIDER_INSERVICE_WAIT_SECONDS, Problems()
    wait = f"the provider's fixed {limit} s InService wait"
    if budget.create_seconds > limit:
        raise ConfigError(
            f"{path}.timeouts",
            f"a create can take {_wait_parts(budget, False)} = {budget.create_seconds} s, longer than {wait}",
            f"timeouts summing to at most {limit - budget.provisioning} s",
        )
    if budget.update_seconds > limit:
        errors.add(
            f"{path}.deployment",
            f"a blue/green update can take {_wait_parts(budget, True)} = {budget.update_seconds} s, longer than {wait}",
            f"waitIntervalSeconds x {traffic_steps(shifting, deployment)} traffic steps + "
            f"terminationWaitSeconds <= {limit - budget.create_seconds} s, or shorter timeouts",
        )
    maximum, key = deployment.maximumExecutionTimeoutSeconds, f"{path}.deployment.maximumExecutionTimeoutSeconds"
    if maximum > limit:
        errors.add(
            key,
            f"{maximum} s outlasts {wait}: `up` would give up while SageMaker still deploys",
            f"{min(budget.update_seconds, limit)}..{limit}",
        )
    elif budget.update_seconds <= limit and maximum < budget.update_seconds:
        errors.add(
            key,
            f"{maximum} s is shorter than the worst-case update ({budget.update_seconds} s): SageMaker would roll "
            "back a slow but healthy deployment",
            f"{budget.update_seconds}..{limit}",
        )
    if errors:
        raise ConfigError.combined(errors)


def _check_endpoint(endpoint: SageMakerEndpointConfig, path: str, facts: Facts, errors: Problems) -> None:
    """The region-free checks of one endpoint: its model source, capacity, storage, scaling guard and bake."""
    chosen, other = ("jumpstart", "huggingface") if endpoint.source == "jumpstart" else ("huggingface", "jumpstart")
    if getattr(endpoint, chosen) is None:
        errors.add(f"{path}.{chosen}", f"required when source is {chosen}")
    if getattr(endpoint, other) is not None:
        errors.add(f"{path}.{other}", f"set only when source is {other}", f"remove it, or source: {other}")
    model, repositories = endpoint.huggingface, facts.lmi.repositories
    if endpoint.source == "huggingface" and model is not None:
        if model.repo not in repositories:
            key = f"{path}.huggingface.repo"
            errors.add(key, f"unsupported checkpoint {bounded(model.repo)}", ", ".join(repositories))
        if model.modelData is not None and model.sendHfToken:
            errors.add(
                f"{path}.huggingface.sendHfToken",
                "the weights come from modelData (S3): the container never reads the Hub, and a token in its "
                "environment only exposes it",
                "false",
            )
        for option in model.options:
            if not CONTAINER_SETTING.fullmatch(option):
                errors.add(
                    f"{path}.huggingface.options.{option}",
                    "not a container setting",
                    "OPTION_* (LMI) or SM_VLLM_* (SageMaker vLLM) names (the token comes from the hfToken secret)",
                )
    scaling = endpoint.autoscaling
    if scaling.minCapacity > scaling.maxCapacity:
        key = f"{path}.autoscaling.minCapacity"
        errors.add(key, f"{scaling.minCapacity} is greater than maxCapacity {scaling.maxCapacity}")
    elif not scaling.minCapacity <= endpoint.initialInstanceCount <= scaling.maxCapacity:
        errors.add(
            f"{path}.initialInstanceCount",
            f"{endpoint.initialInstanceCount} is outside autoscaling",
            f"{scaling.minCapacity}..{scaling.maxCapacity}",
        )
    if scaling.scaleInCooldown <= scaling.scaleOutCooldown:
        errors.add(
            f"{path}.autoscaling.scaleInCooldown",
            f"{scaling.scaleInCooldown} s is not longer than scaleOutCooldown {scaling.scaleOutCooldown} s, so the "
            "endpoint could flap",
            f"more than {scaling.scaleOutCooldown}",
        )
    instances = facts.sagemaker_instances
    instance = instances.get(endpoint.instanceType)
    if instance is None:
        key = f"{path}.instanceType"
        errors.add(key, f"unsupported instance type {bounded(endpoint.instanceType)}", ", ".join(instances))
    elif instance.storage == "nvme":
        if endpoint.volumeSizeGb is not None:
            errors.add(
                f"{path}.volumeSizeGb",
                f"{endpoint.instanceType} has local NVMe storage only, where SageMaker rejects a volume size",
                "unset",
            )
        if endpoint.kmsKeyArn is not None and not endpoint.dataCapture.enabled:
            errors.add(
                f"{path}.kmsKeyArn",
                f"{endpoint.instanceType} storage is hardware-encrypted NVMe, where SageMaker rejects a volume key, "
                "and data capture is off",
                "unset, or enable dataCapture",
            )
    # An instance-type change of a registered variant fails UpdateEndpoint: make it a two-step change.
    if scaling.enabled and scaling.instanceType != endpoint.instanceType:
        errors.add(
            f"{path}.autoscaling.instanceType",
            f"autoscaling is registered for {scaling.instanceType}, the endpoint asks for {endpoint.instanceType}: "
            "SageMaker refuses to change the instance type of a variant that is a scaling target",
            f"{endpoint.instanceType} after a `pulumi up` with autoscaling.enabled: false (docs/sagemaker.md, "
            "Changing the instance type)",
        )
    # A bake shorter than the alarms' evaluation window cannot roll anything back.
    deployment, alarms = endpoint.deployment, endpoint.deployment.rollbackAlarms
    window = alarms.periodSeconds * alarms.evaluationPeriods
    if deployment.waitIntervalSeconds < window:
        errors.add(
            f"{path}.deployment.waitIntervalSeconds",
            f"{deployment.waitIntervalSeconds} s of baking is shorter than the rollback alarms' window "
            f"(periodSeconds {alarms.periodSeconds} x evaluationPeriods {alarms.evaluationPeriods} = "
            f"{window} s): no alarm could trip before the next traffic shift",
            f">= {window}",
        )


def check_sagemaker(config: SageMakerConfig, facts: Facts, prefix: str = "sagemaker") -> list[ConfigError]:
    """Every problem across the endpoints, each with its key path (the region-free checks)."""
    errors, seen = Problems(), set()
    for index, endpoint in enumerate(config.endpoints):
        path = f"{prefix}.endpoints[{index}]"
        if endpoint.name in seen:
            errors.add(f"{path}.name", f"endpoint name {endpoint.name!r} is used twice")
        seen.add(endpoint.name)
        _check_endpoint(endpoint, path, facts, errors)
    return errors


def _timeout(configured: Optional[int], default: Optional[int], key: str) -> Optional[int]:
    """The configured timeout, else the default, which must also fit SageMaker's 60..3600."""
    if configured is None and default is not None and not 60 <= default <= 3600:
        raise ConfigError(key, f"the model's default of {default} s is outside what SageMaker accepts", "set 60..3600")
    return default if configured is None else configured


def _traffic_shifting(endpoint: SageMakerEndpointConfig, path: str) -> tuple[Shifting, Optional[str]]:
    """The traffic-shifting mode, valid for the variant's instance count: a canary or a linear step may move at
    most half the instances (SageMaker TrafficRoutingConfig; sizes round up to whole instances). Unset means
    CANARY where it fits, else ALL_AT_ONCE with the reason; a configured mode that does not fit is refused."""
    deployment, count = endpoint.deployment, endpoint.initialInstanceCount
    linear = deployment.type == "LINEAR"
    size_key, percent = (
        ("linearStepSize", deployment.linearStepSize) if linear else ("canarySize", deployment.canarySize)
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
        model = jumpstart_model(endpoint, path, region, source, allow_unverified)
    else:
        model = huggingface_model(endpoint, path, region, facts)
    container, model_source, defaults = model
    timeouts, instance = endpoint.timeouts, facts.sagemaker_instances[endpoint.instanceType]
    ebs = instance.storage == "ebs"
    variant = ProductionVariant(
        model_data_download_timeout=_timeout(
            timeouts.modelDataDownload, defaults.model_data_download_timeout, f"{path}.timeouts.modelDataDownload"
        ),
        container_startup_health_check_timeout=_timeout(
            timeouts.containerStartupHealthCheck,
            defaults.container_startup_health_check_timeout,
            f"{path}.timeouts.containerStartupHealthCheck",
        ),
        volume_size_gb=(defaults.volume_size_gb if endpoint.volumeSizeGb is None else endpoint.volumeSizeGb)
        if ebs
        else None,
        ebs_storage=ebs,
        inference_ami_version=defaults.inference_ami_version,
    )
    price, count = instance.hourlyUsd, endpoint.initialInstanceCount
    contract = ServingEndpoint(
        id=endpoint.name,
        kind="sagemaker",
        servedModelName=model_source.model_id if isinstance(model_source, JumpStartSource) else model_source.repo,
        url=f"https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{endpoint.name}/invocations",
        gpus=instance.gpus * count,
        region=region,
        variant=endpoint.variantName,
        instanceType=endpoint.instanceType,
        instanceCount=count,
        usdPerHour=round(price * count, 4) if price is not None else None,
    )
    why = "SageMaker uses only a KMS key of the endpoint's region for its storage and data capture"
    _check_key_region(endpoint.kmsKeyArn, region, f"{path}.kmsKeyArn", why)
    shifting, shifting_note = _traffic_shifting(endpoint, path)
    has_model_data = container.model_data is not None or bool(container.additional_model_data)
    waits = WaitBudget(
        provisioning=int(facts.sagemaker_provisioning.value),
        model_download=(variant.model_data_download_timeout or 0) if has_model_data else 0,
        startup=variant.container_startup_health_check_timeout or 0,
        traffic_shifting=traffic_steps(shifting, endpoint.deployment) * endpoint.deployment.waitIntervalSeconds,
        termination=endpoint.deployment.terminationWaitSeconds,
    )
    check_waits(waits, shifting, endpoint.deployment, path)
    return PlannedEndpoint(
        name=endpoint.name,
        region=region,
        source=model_source,
        container=container,
        variant=variant,
        config=endpoint,
        shifting=shifting,
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
    if source is None and any(endpoint.source == "jumpstart" for endpoint in sagemaker.endpoints):
        source = spec_source(sagemaker, region, s3_client)
    planned: list[PlannedEndpoint] = []
    errors = Problems()
    for index, endpoint in enumerate(sagemaker.endpoints):
        path = f"sagemaker.endpoints[{index}]"
        try:
            planned.append(_plan_one(endpoint, path, region, source, facts, sagemaker.allowUnverifiedSpecs))
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
            errors.add("sagemaker.snapshotDir", problem, "a copy made by tools/refresh_jumpstart_snapshot.py")
    if errors:
        raise ConfigError.combined(errors)
    return planned
