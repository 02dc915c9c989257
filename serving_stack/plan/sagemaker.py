"""From the `sagemaker` config to what each SageMaker endpoint deploys, as plain values.

Pure and run before any resource is registered: JumpStart models resolve from the committed snapshot (or
the content bucket), the Hugging Face path takes its image from `catalog/sagemaker_lmi.yaml`, so every
value the component sets is concrete at preview and a bad setting fails with its key path.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, NamedTuple, Optional

import boto3

from serving_stack.config.sagemaker import SageMakerConfig, SageMakerEndpointConfig
from serving_stack.config.stack import StackConfig
from serving_stack.contract.outputs import ServingEndpoint
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
from serving_stack.plan.sagemaker_fit import check_fit, check_vllm
from serving_stack.plan.sagemaker_spec import (
    BlueGreen,
    Capture,
    HuggingFaceSource,
    JumpStartSource,
    ModelContainer,
    ModelSource,
    PlannedEndpoint,
    ProductionVariant,
    Scaling,
    invoke_url,
)
from serving_stack.plan.sagemaker_waits import check_waits, wait_budget

PROJECT_DIR = PROJECT_DATA_DIR.parent
REGION_KEY = "sagemaker.region"


class _VariantDefaults(NamedTuple):
    """What the model source suggests for the variant where the endpoint config says nothing, and notes."""

    model_data_download_timeout: Optional[int]
    container_startup_health_check_timeout: Optional[int]
    volume_size_gb: Optional[int]
    inference_ami_version: Optional[str]
    notes: tuple[str, ...] = ()


def _spec_source(config: SageMakerConfig, region: str, s3_client: Any) -> SpecSource:
    if config.specSource == "s3":
        if s3_client is None:
            s3_client = boto3.client("s3", region_name=region)
        return S3SpecSource(region, s3_client)
    directory = PROJECT_DIR / config.snapshotDir
    if not directory.is_dir():
        raise ConfigError(
            "sagemaker.snapshotDir",
            f"{bounded(config.snapshotDir)} is not a directory of the project",
            "a path relative to the project root, such as catalog/jumpstart",
        )
    return SnapshotSpecSource(directory)


def _timeout(configured: Optional[int], default: Optional[int], key: str) -> Optional[int]:
    """The configured timeout, else the default, which must also fit SageMaker's 60..3600."""
    if configured is not None or default is None:
        return configured
    if not 60 <= default <= 3600:
        raise ConfigError(key, f"the model's default of {default} s is outside what SageMaker accepts", "set 60..3600")
    return default


def _jumpstart(
    endpoint: SageMakerEndpointConfig,
    path: str,
    region: str,
    source: SpecSource,
    allow_unverified: bool,
) -> tuple[ModelContainer, ModelSource, str, _VariantDefaults]:
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
    defaults = _VariantDefaults(
        resolved.model_data_download_timeout,
        resolved.container_startup_health_check_timeout,
        resolved.volume_size_gb,
        None,
    )
    provenance = resolved.provenance.label() if resolved.provenance is not None else None
    return container, JumpStartSource(model.modelId, model.version, provenance), model.modelId, defaults


def _huggingface(
    endpoint: SageMakerEndpointConfig,
    path: str,
    region: str,
    facts: Facts,
) -> tuple[ModelContainer, ModelSource, str, _VariantDefaults]:
    model = endpoint.huggingface
    assert model is not None  # checked by check_sagemaker
    lmi = facts.lmi
    repo = lmi.repositories[model.repo]
    image = model.lmiImage if model.lmiImage is not None else lmi.image(region)
    if image is None:
        regions = ", ".join(lmi.registries.accounts)
        raise ConfigError(
            f"{path}.huggingface.lmiImage",
            f"no pinned LMI image for {region!r} in catalog/sagemaker_lmi.yaml",
            f"a region listed there ({regions}), or an image",
        )
    if model.lmiImage is None:  # an image of one's own brings its own vLLM
        check_vllm(model.repo, repo, lmi, f"{path}.huggingface.repo")
    fit = check_fit(model.repo, repo, endpoint.instanceType, facts.sagemaker_instances, lmi, f"{path}.instanceType")
    image_region = image.split(".")[3]
    if image_region != region:
        raise ConfigError(
            f"{path}.huggingface.lmiImage",
            f"{image!r} is in {image_region}, the endpoint in {region}; "
            "SageMaker pulls only from ECR in the endpoint's region",
            f"an image in {region}",
        )
    environment = {**lmi.environment, **repo.options, **model.options, "HF_MODEL_ID": model.repo}
    container = ModelContainer(
        image=image,
        environment=MappingProxyType(environment),
        model_data=None,
        additional_model_data=(),
        enable_network_isolation=False,
        needs_hf_token=model.sendHfToken,
    )
    # The AMI goes with the pinned image; an image of one's own brings its own requirements.
    ami = lmi.inferenceAmiVersion if model.lmiImage is None else None
    defaults = _VariantDefaults(
        lmi.timeouts.modelDataDownload,
        lmi.timeouts.containerStartupHealthCheck,
        lmi.volumeSizeGb,
        ami,
        (fit.note,) if fit.note else (),
    )
    source = HuggingFaceSource(model.repo, pinned_image=model.lmiImage is None, precision_path=fit.precision_path)
    return container, source, model.repo, defaults


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
        container, model_source, served_model, defaults = _jumpstart(endpoint, path, region, source, allow_unverified)
    else:
        container, model_source, served_model, defaults = _huggingface(endpoint, path, region, facts)
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
        costPerHourUsd=round(price * endpoint.initialInstanceCount, 4) if price is not None else None,
    )
    deployment = BlueGreen.of(endpoint.deployment)
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
        scaling=Scaling.of(endpoint.autoscaling),
        deployment=deployment,
        data_capture=Capture.of(endpoint.dataCapture),
        kms_key_arn=endpoint.kmsKeyArn,
        endpoint=contract,
        waits=waits,
        notes=defaults.notes,
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
        source = _spec_source(sagemaker, region, s3_client)
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
            errors.append(error)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigError.combined(errors)
    return planned
