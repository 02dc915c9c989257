"""Planned SageMaker values -> the provider's argument objects of the model, endpoint config and endpoint.

Pure mapping, no resources: `SageMakerEndpoint` passes what these return to `sm.Model`,
`sm.EndpointConfiguration` and `sm.Endpoint`.
"""

from __future__ import annotations

from typing import Any, Optional

import pulumi
import pulumi_aws.sagemaker as sm

from serving_stack.facts.jumpstart import S3ModelData
from serving_stack.plan.sagemaker_spec import BlueGreen, ModelContainer, ProductionVariant


def s3_source(data: S3ModelData, args_class: type, access_class: type) -> Any:
    access = access_class(accept_eula=data.accept_eula) if data.accept_eula is not None else None
    return args_class(
        s3_uri=data.s3_uri,
        s3_data_type=data.s3_data_type,
        compression_type=data.compression_type,
        model_access_config=access,
    )


def primary_container(
    container: ModelContainer,
    hf_token: Optional[pulumi.Input[str]],
) -> sm.ModelPrimaryContainerArgs:
    environment: dict[str, pulumi.Input[str]] = dict(container.environment)
    if container.needs_hf_token:
        if hf_token is None:
            raise ValueError("the model sends the Hugging Face token, but SageMakerEndpointArgs.hf_token is None")
        # A container environment cannot reference Secrets Manager: the token is a Pulumi secret in state
        # and readable through DescribeModel (see HuggingFaceModel.sendHfToken).
        environment["HF_TOKEN"] = pulumi.Output.secret(hf_token)
    model_data = None
    if container.model_data is not None:
        model_data = sm.ModelPrimaryContainerModelDataSourceArgs(
            s3_data_sources=[
                s3_source(
                    container.model_data,
                    sm.ModelPrimaryContainerModelDataSourceS3DataSourceArgs,
                    sm.ModelPrimaryContainerModelDataSourceS3DataSourceModelAccessConfigArgs,
                )
            ]
        )
    additional = [
        sm.ModelPrimaryContainerAdditionalModelDataSourceArgs(
            channel_name=source.channel_name,
            s3_data_sources=[
                s3_source(
                    source.s3,
                    sm.ModelPrimaryContainerAdditionalModelDataSourceS3DataSourceArgs,
                    sm.ModelPrimaryContainerAdditionalModelDataSourceS3DataSourceModelAccessConfigArgs,
                )
            ],
        )
        for source in container.additional_model_data
    ]
    return sm.ModelPrimaryContainerArgs(
        image=container.image,
        mode="SingleModel",
        environment=environment,
        model_data_source=model_data,
        additional_model_data_sources=additional or None,
    )


def traffic_routing(
    deployment: BlueGreen,
) -> sm.EndpointDeploymentConfigBlueGreenUpdatePolicyTrafficRoutingConfigurationArgs:
    routing = sm.EndpointDeploymentConfigBlueGreenUpdatePolicyTrafficRoutingConfigurationArgs
    if deployment.type == "CANARY":
        return routing(
            type="CANARY",
            wait_interval_in_seconds=deployment.wait_interval_seconds,
            canary_size=sm.EndpointDeploymentConfigBlueGreenUpdatePolicyTrafficRoutingConfigurationCanarySizeArgs(
                type="CAPACITY_PERCENT", value=deployment.canary_size
            ),
        )
    if deployment.type == "LINEAR":
        return routing(
            type="LINEAR",
            wait_interval_in_seconds=deployment.wait_interval_seconds,
            linear_step_size=sm.EndpointDeploymentConfigBlueGreenUpdatePolicyTrafficRoutingConfigurationLinearStepSizeArgs(
                type="CAPACITY_PERCENT", value=deployment.linear_step_size
            ),
        )
    return routing(type="ALL_AT_ONCE", wait_interval_in_seconds=deployment.wait_interval_seconds)


def production_variant(
    variant: ProductionVariant,
    model_name: pulumi.Input[str],
) -> sm.EndpointConfigurationProductionVariantArgs:
    return sm.EndpointConfigurationProductionVariantArgs(
        variant_name=variant.name,
        model_name=model_name,
        instance_type=variant.instance_type,
        initial_instance_count=variant.initial_instance_count,
        model_data_download_timeout_in_seconds=variant.model_data_download_timeout,
        container_startup_health_check_timeout_in_seconds=variant.container_startup_health_check_timeout,
        volume_size_in_gb=variant.volume_size_gb,
        inference_ami_version=variant.inference_ami_version,
        routing_configs=[
            sm.EndpointConfigurationProductionVariantRoutingConfigArgs(routing_strategy="LEAST_OUTSTANDING_REQUESTS")
        ],
    )
