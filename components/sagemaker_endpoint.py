"""One SageMaker real-time endpoint: a least-privilege execution role, the model, its endpoint config, the
endpoint with blue/green deployment and alarm rollback, and target-tracking autoscaling.

Every value comes planned (`serving_stack.plan.sagemaker`), so the component only maps it onto resources
(the provider's argument objects are built in `sagemaker_resource_args`). The endpoint has an explicit
name, which the rollback alarms' dimensions and the scaling target's resource id need before it exists;
the model and endpoint config are auto-named, so a change replaces them side by side and the endpoint
moves to the new config with a blue/green update.

Rollback safety: when an alarm rolls a deployment back, the endpoint keeps serving the old config while the
engine deletes the replaced model and config at the end of the update. Both are therefore
`retain_on_delete` (Pulumi forgets them; SageMaker models and configs cost nothing): the endpoint never
loses the config it runs, and `pulumi up --refresh` shows the rolled-back endpoint as drift and deploys
again. Retained configs are removed by the procedure in `docs/sagemaker.md`, which finds them by tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_aws as aws
import pulumi_aws.sagemaker as sm

from components.sagemaker_alarms import rollback_alarms
from components.sagemaker_capture import capture_bucket, encryption_key
from components.sagemaker_iam import (
    CAPTURE_PREFIX,
    execution_policy,
    partition,
    rollback_policy,
    trust_policy,
)
from components.sagemaker_resource_args import primary_container, production_variant, traffic_routing
from serving_stack.names import TypeTokens
from serving_stack.plan.sagemaker_spec import (
    PlannedEndpoint,
    invoke_url,
)


@dataclass(frozen=True)
class SageMakerEndpointArgs:
    plan: PlannedEndpoint  # the endpoint as planned: name, region, container, variant, scaling, capture, tags
    hf_token: Optional[pulumi.Input[str]] = None  # the Hugging Face token secret, when the container needs one


class SageMakerEndpoint(pulumi.ComponentResource):
    """A SageMaker endpoint serving Nemotron; its outputs are what a caller needs to invoke it."""

    endpoint_name: pulumi.Output[str]
    endpoint_arn: pulumi.Output[str]
    role_arn: pulumi.Output[str]

    def __init__(self, name: str, args: SageMakerEndpointArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.SAGEMAKER_ENDPOINT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        retained = pulumi.ResourceOptions(parent=self, retain_on_delete=True)
        region, endpoint_name, variant, tags = args.plan.region, args.plan.name, args.plan.variant, dict(args.plan.tags)
        part = partition(region)
        capture = args.plan.data_capture.enabled
        for note in args.plan.notes:
            pulumi.log.warn(note, resource=self)

        kms_key_arn: Optional[pulumi.Input[str]] = args.plan.kms_key_arn
        if kms_key_arn is None and (variant.ebs_storage or capture):
            kms_key_arn = encryption_key(
                name, endpoint_name, region, holds_captured_data=capture, tags=tags, parent=self
            ).arn
        bucket = capture_bucket(name, region, kms_key_arn, tags=tags, parent=self) if capture else None

        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        role = aws.iam.Role(
            f"{name}-role",
            description=f"Execution role of SageMaker endpoint {endpoint_name}",
            assume_role_policy=trust_policy(account, region, part),
            tags=tags,
            opts=child,
        )
        role_policy = aws.iam.RolePolicy(
            f"{name}-role-policy",
            role=role.id,
            policy=execution_policy(args.plan.container, endpoint_name, region, part, role.arn, kms_key_arn, bucket),
            opts=child,
        )

        model = sm.Model(
            f"{name}-model",
            execution_role_arn=role.arn,
            primary_container=primary_container(args.plan.container, args.hf_token),
            enable_network_isolation=args.plan.container.enable_network_isolation,
            region=region,
            tags=tags,
            # The role's permissions have no data edge to the model, but SageMaker pulls with them.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role_policy], retain_on_delete=True),
        )
        data_capture = None
        if bucket is not None:
            data_capture = sm.EndpointConfigurationDataCaptureConfigArgs(
                enable_capture=True,
                initial_sampling_percentage=args.plan.data_capture.sampling_percentage,
                destination_s3_uri=pulumi.Output.concat("s3://", bucket.id, f"/{CAPTURE_PREFIX}"),
                kms_key_id=kms_key_arn,
                capture_options=[
                    sm.EndpointConfigurationDataCaptureConfigCaptureOptionArgs(capture_mode=mode)
                    for mode in ("Input", "Output")
                ],
            )
        endpoint_config = sm.EndpointConfiguration(
            f"{name}-config",
            production_variants=[production_variant(variant, model.name)],
            # Local NVMe storage is hardware-encrypted; SageMaker fails the config if a volume key is given.
            kms_key_arn=kms_key_arn if variant.ebs_storage else None,
            data_capture_config=data_capture,
            region=region,
            tags=tags,
            opts=retained,
        )

        alarms = rollback_alarms(
            name,
            endpoint_name,
            variant.name,
            region,
            endpoint_config.name,
            args.plan.deployment.rollback_alarms,
            tags,
            child,
        )
        alarm_policy = aws.iam.RolePolicy(
            f"{name}-rollback-policy", role=role.id, policy=rollback_policy([alarm.arn for alarm in alarms]), opts=child
        )
        deployment = args.plan.deployment
        endpoint = sm.Endpoint(
            f"{name}-endpoint",
            name=endpoint_name,
            endpoint_config_name=endpoint_config.name,
            deployment_config=sm.EndpointDeploymentConfigArgs(
                blue_green_update_policy=sm.EndpointDeploymentConfigBlueGreenUpdatePolicyArgs(
                    traffic_routing_configuration=traffic_routing(deployment),
                    termination_wait_in_seconds=deployment.termination_wait_seconds,
                    maximum_execution_timeout_in_seconds=deployment.maximum_execution_timeout_seconds,
                ),
                auto_rollback_configuration=sm.EndpointDeploymentConfigAutoRollbackConfigurationArgs(
                    alarms=[
                        sm.EndpointDeploymentConfigAutoRollbackConfigurationAlarmArgs(alarm_name=alarm.name)
                        for alarm in alarms
                    ]
                ),
            ),
            region=region,
            tags=tags,
            # Rollback reads the alarms with the role: the permission must exist before any deployment.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[alarm_policy]),
        )
        if args.plan.scaling.enabled:
            self._autoscaling(name, args, endpoint, child)

        self.endpoint_name = endpoint.name
        self.endpoint_arn = endpoint.arn
        self.role_arn = role.arn
        self.register_outputs(
            {
                "endpointName": self.endpoint_name,
                "endpointArn": self.endpoint_arn,
                "invokeUrl": invoke_url(region, endpoint_name),
                "roleArn": self.role_arn,
            }
        )

    @staticmethod
    def _autoscaling(
        name: str,
        args: SageMakerEndpointArgs,
        endpoint: sm.Endpoint,
        opts: pulumi.ResourceOptions,
    ) -> None:
        """Target tracking on invocations per instance, with a slower scale-in than scale-out."""
        scaling, region = args.plan.scaling, args.plan.region
        target = aws.appautoscaling.Target(
            f"{name}-scaling-target",
            service_namespace="sagemaker",
            scalable_dimension="sagemaker:variant:DesiredInstanceCount",
            resource_id=pulumi.Output.concat("endpoint/", endpoint.name, "/variant/", args.plan.variant.name),
            min_capacity=scaling.min_capacity,
            max_capacity=scaling.max_capacity,
            region=region,
            tags=dict(args.plan.tags),
            opts=opts,
        )
        aws.appautoscaling.Policy(
            f"{name}-scaling-policy",
            name=f"{args.plan.name}-invocations",
            policy_type="TargetTrackingScaling",
            service_namespace=target.service_namespace,
            scalable_dimension=target.scalable_dimension,
            resource_id=target.resource_id,
            target_tracking_scaling_policy_configuration=aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationArgs(
                target_value=scaling.target_invocations_per_instance,
                predefined_metric_specification=aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationPredefinedMetricSpecificationArgs(
                    predefined_metric_type="SageMakerVariantInvocationsPerInstance"
                ),
                scale_in_cooldown=scaling.scale_in_cooldown,
                scale_out_cooldown=scaling.scale_out_cooldown,
                disable_scale_in=False,
            ),
            region=region,
            opts=opts,
        )
