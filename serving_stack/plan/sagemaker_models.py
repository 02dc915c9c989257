"""The model side of a SageMaker endpoint: its container, model source, served model name and the variant
defaults the model suggests, from a pinned JumpStart model or a Hugging Face repo on the pinned LMI image.

Pure and run before any resource is registered (`sagemaker.plan_sagemaker_endpoints` calls it per
endpoint): JumpStart specs come from the committed snapshot or the content bucket (`spec_source`).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, NamedTuple, Optional

import boto3

from serving_stack.config.sagemaker import SageMakerConfig, SageMakerEndpointConfig
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.data import PROJECT_DATA_DIR
from serving_stack.facts.jumpstart import (
    ConfigKeys,
    S3SpecSource,
    SnapshotSpecSource,
    SpecSource,
    resolve_jumpstart_model,
)
from serving_stack.facts.sagemaker import EnvironmentLimits
from serving_stack.plan.placeholders import Placeholder
from serving_stack.plan.sagemaker_fit import check_fit, pick_container
from serving_stack.plan.sagemaker_spec import HuggingFaceSource, JumpStartSource, ModelContainer, ModelSource

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
    environment = {
        **form.environment,
        **form.environment_of(arguments),
        parallel.variable: "max" if parallel.value == "max" else str(instance.gpus),
        **model.options,
        form.modelVariable: model.repo,
    }
    _check_environment(environment, model.sendHfToken, lmi.environmentLimits, f"{path}.huggingface.options")
    container = ModelContainer(
        image=image,
        environment=MappingProxyType(environment),
        model_data=None,
        additional_model_data=(),
        enable_network_isolation=False,
        needs_hf_token=model.sendHfToken,
    )
    unverified = repo.engineArguments.unverified_on(instance.gpuArchitecture)
    notes = tuple(
        f"{endpoint.name}: the vLLM recipe of {model.repo} requires {what}; UNVERIFIED, not passed: check the "
        "endpoint's health before shifting traffic to it"
        for what in unverified
    )
    # The AMI goes with the listed containers; an image of one's own brings its own requirements.
    defaults = VariantDefaults(
        lmi.timeouts.modelDataDownload,
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
