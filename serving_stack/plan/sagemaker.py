"""From the `sagemaker` config to what each SageMaker endpoint deploys, as plain values.

Pure and run before any resource is registered: JumpStart models resolve from the committed snapshot (or
the content bucket), the Hugging Face path takes its image from `catalog/sagemaker_lmi.yaml` (both in
`sagemaker_models`), so every value the component sets is concrete at preview and a bad setting fails with
its key path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Optional

from serving_stack.config.sagemaker import SageMakerEndpointConfig
from serving_stack.config.stack import StackConfig
from serving_stack.contract.outputs import ServingEndpoint
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.jumpstart import SpecSource
from serving_stack.plan.sagemaker_models import REGION_KEY, huggingface_model, jumpstart_model, spec_source
from serving_stack.plan.sagemaker_spec import (
    BlueGreen,
    Capture,
    PlannedEndpoint,
    ProductionVariant,
    Scaling,
    invoke_url,
    shifted_instances,
)
from serving_stack.plan.sagemaker_waits import check_waits, wait_budget


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
        costPerHourUsd=round(price * endpoint.initialInstanceCount, 4) if price is not None else None,
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
        scaling=Scaling.of(endpoint.autoscaling),
        deployment=deployment,
        data_capture=Capture.of(endpoint.dataCapture),
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
