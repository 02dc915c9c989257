"""One SageMaker real-time endpoint: a least-privilege execution role, the model, its endpoint config, the
endpoint with blue/green deployment and alarm rollback, and target-tracking autoscaling. Every value comes
planned (`serving_stack.plan.sagemaker`); module-level functions map it onto the provider's argument objects.

- The role trusts SageMaker in this account and Region, with inline policies to pull the one image, read the
  artifacts, write logs, metrics and captured data, and read the rollback alarms (`cloudwatch:DescribeAlarms`).
- The endpoint has an explicit name, which the alarms' dimensions and the scaling target's resource id need
  before it exists; the model and endpoint config are auto-named, so a change replaces them side by side and the
  endpoint moves to the new config with a blue/green update.
- The rollback alarms watch the new fleet: SageMaker publishes invocation metrics with an `EndpointConfigName`
  dimension (developer guide, "Auto-Rollback Configuration and Monitoring"), so a noisy old fleet cannot abort a
  good deployment. Each alarm is updated in place to the new config's name before the endpoint update starts;
  its name stays fixed (the endpoint's rollback configuration names it; changing that forces a replacement).
- When an alarm rolls a deployment back, the endpoint keeps serving the old config while the engine deletes the
  replaced model and config, so both are `retain_on_delete` (they cost nothing): the endpoint never loses the
  config it runs, and `pulumi up --refresh` shows the rollback as drift. docs/sagemaker.md removes them by tag.
- The encryption key and data-capture bucket outlive the stack when they hold captured data (`retain_on_delete`:
  a destroy would fail on a non-empty bucket, or schedule the key's deletion while its objects stay unreadable).
  The bucket's encryption and public-access settings are one per bucket, so a replacement deletes the old
  setting before writing the new one; the public-access block is replaced only with a new bucket.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_aws as aws
import pulumi_aws.sagemaker as sm

from components.iam import allow, assume_role_policy
from serving_stack.facts.sagemaker import ModelContainer, S3ModelData
from serving_stack.names import TypeTokens
from serving_stack.plan.sagemaker import PlannedEndpoint


def s3_source(data: S3ModelData, args_class: type, access_class: type) -> Any:
    access = access_class(accept_eula=data.accept_eula) if data.accept_eula is not None else None
    return args_class(
        s3_uri=data.s3_uri,
        s3_data_type=data.s3_data_type,
        compression_type=data.compression_type,
        model_access_config=access,
    )


def primary_container(container: ModelContainer, hf_token: Optional[pulumi.Input[str]]) -> sm.ModelPrimaryContainerArgs:
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


CAPTURE_PREFIX = "capture"
SSE = aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs


def partition(region: str) -> str:
    return "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"


def _artifact_read_statements(container: ModelContainer, part: str) -> list[dict[str, Any]]:
    """GetObject on the model artifacts only, and ListBucket limited to their prefixes."""
    sources = [container.model_data] if container.model_data is not None else []
    sources += [source.s3 for source in container.additional_model_data]
    if not sources:
        return []
    objects, prefixes = [], defaultdict(list)
    for data in sources:
        bucket, _, key = data.s3_uri.removeprefix("s3://").partition("/")
        pattern = f"{key}*" if data.s3_data_type == "S3Prefix" else key
        objects.append(f"arn:{part}:s3:::{bucket}/{pattern}")
        prefixes[bucket].append(pattern)
    return [
        allow("ReadModelArtifacts", "s3:GetObject", objects),
        *(
            allow(
                f"ListModelArtifacts{i}", "s3:ListBucket", f"arn:{part}:s3:::{bucket}", StringLike={"s3:prefix": pats}
            )
            for i, (bucket, pats) in enumerate(sorted(prefixes.items()))
        ),
    ]


def execution_policy(
    plan: PlannedEndpoint,
    role_arn: pulumi.Output[str],
    kms_key_arn: Optional[pulumi.Input[str]],
    capture_bucket: Optional[aws.s3.Bucket],
) -> pulumi.Output[str]:
    """What the endpoint's instances do with the role: pull the image, read the artifacts, write logs
    and metrics, and write captured data. No managed policy (never AmazonSageMakerFullAccess)."""
    container, endpoint_name, region, part = plan.container, plan.name, plan.region, partition(plan.region)
    account = role_arn.apply(lambda arn: arn.split(":")[4])
    # `<account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>` -> the repository ARN
    registry, _, reference = container.image.partition("/")
    image_account, _, _, image_region = registry.split(".")[:4]
    repository = reference.partition("@")[0].partition(":")[0]
    log_group = pulumi.Output.concat(
        f"arn:{part}:logs:{region}:", account, f":log-group:/aws/sagemaker/Endpoints/{endpoint_name}"
    )
    logs = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"]
    statements: list[Any] = [
        allow("PullImageToken", "ecr:GetAuthorizationToken", "*"),
        allow(
            "PullImage",
            ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            f"arn:{part}:ecr:{image_region}:{image_account}:repository/{repository}",
        ),
        allow("WriteLogs", logs, [log_group, pulumi.Output.concat(log_group, ":*")]),
        allow(
            "PutEndpointMetrics",
            "cloudwatch:PutMetricData",
            "*",
            StringEquals={"cloudwatch:namespace": "/aws/sagemaker/Endpoints"},
        ),
        *_artifact_read_statements(container, part),
    ]
    if container.model_data_kms_key is not None:
        s3 = f"s3.{region}.amazonaws.com{'.cn' if part == 'aws-cn' else ''}"
        key = container.model_data_kms_key
        statements.append(allow("DecryptModelArtifacts", "kms:Decrypt", key, StringEquals={"kms:ViaService": s3}))
    if capture_bucket is not None:
        objects = pulumi.Output.concat(f"arn:{part}:s3:::", capture_bucket.id, f"/{CAPTURE_PREFIX}/*")
        statements += [
            allow("WriteCapturedData", "s3:PutObject", objects),
            allow("EncryptCapturedData", ["kms:Encrypt", "kms:GenerateDataKey"], kms_key_arn),
        ]
    return pulumi.Output.json_dumps({"Version": "2012-10-17", "Statement": statements})


def trust_policy(account: pulumi.Output[str], region: str, part: str) -> pulumi.Output[str]:
    """SageMaker may assume the role only for this account's inference resources in this region: `ArnLike`
    `aws:SourceArn` `arn:<partition>:sagemaker:<region>:<account>:*`, exactly the form AWS documents for
    real-time, serverless and asynchronous inference (SageMaker developer guide, "Cross-service confused deputy
    prevention", section "SageMaker Inference": "Do not replace the aws:SourceArn in this template with the full
    ARN of a specific model or endpoint. The ARN must be in the format provided above. The asterisk in the ARN
    template does not stand for wildcard and should not be changed"; awsdocs/amazon-sagemaker-developer-guide
    doc_source/security-confused-deputy-prevention.md @ b7eb523). No `aws:SourceAccount`: "because the account
    number is part of the aws:SourceArn value, you do not need to specify an aws:SourceAccount value"."""
    return account.apply(
        lambda account_id: assume_role_policy(
            "sagemaker.amazonaws.com", source_arn=f"arn:{part}:sagemaker:{region}:{account_id}:*"
        )
    )


def capture_bucket(
    name: str, plan: PlannedEndpoint, kms_key_arn: Optional[pulumi.Input[str]], parent: pulumi.Resource
) -> aws.s3.Bucket:
    """An auto-named, SSE-KMS, private bucket that is kept when the stack lets go of it."""
    region, tags = plan.region, plan.tags
    bucket = aws.s3.Bucket(
        f"{name}-capture",
        region=region,
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=True),
    )
    one_per_bucket = pulumi.ResourceOptions(parent=parent, delete_before_replace=True)
    aws.s3.BucketServerSideEncryptionConfiguration(
        f"{name}-capture-encryption",
        bucket=bucket.id,
        region=region,
        rules=[
            aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                bucket_key_enabled=True,
                apply_server_side_encryption_by_default=SSE(sse_algorithm="aws:kms", kms_master_key_id=kms_key_arn),
            )
        ],
        opts=one_per_bucket,
    )
    aws.s3.BucketPublicAccessBlock(
        f"{name}-capture-public-access",
        bucket=bucket.id,
        region=region,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=pulumi.ResourceOptions(parent=parent),
    )  # replaced only with a new bucket: nothing to collide with
    return bucket


def rollback_alarms(
    name: str, plan: PlannedEndpoint, endpoint_config_name: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> list[aws.cloudwatch.MetricAlarm]:
    """5xx errors and p99 model latency of the variant on the config being deployed."""
    thresholds, endpoint_name, region, tags = plan.config.deployment.rollbackAlarms, plan.name, plan.region, plan.tags
    common: dict[str, Any] = {
        "namespace": "AWS/SageMaker",
        "dimensions": {
            "EndpointName": endpoint_name,
            "VariantName": plan.config.variantName,
            "EndpointConfigName": endpoint_config_name,
        },
        "period": thresholds.periodSeconds,
        "evaluation_periods": thresholds.evaluationPeriods,
        "comparison_operator": "GreaterThanOrEqualToThreshold",
        "treat_missing_data": "notBreaching",
        "region": region,
        "tags": dict(tags),
        "opts": opts,
    }
    measured = {  # ModelLatency is in microseconds
        "5xx": ("Invocation5XXErrors", {"statistic": "Sum"}, thresholds.invocation5xxErrors, "model 5xx errors"),
        "p99-latency": (
            "ModelLatency",
            {"extended_statistic": "p99"},
            thresholds.modelLatencyP99Ms * 1000,
            "p99 model latency",
        ),
    }
    return [
        aws.cloudwatch.MetricAlarm(
            f"{name}-{role}",
            name=f"{endpoint_name}-{role}",
            metric_name=metric,
            threshold=threshold,
            alarm_description=f"{endpoint_name}: {what} on the new fleet; rolls a blue/green deployment back",
            **statistic,
            **common,
        )
        for role, (metric, statistic, threshold, what) in measured.items()
    ]


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
        plan, child = args.plan, pulumi.ResourceOptions(parent=self)
        region, endpoint_name, variant, tags = plan.region, plan.name, plan.variant, dict(plan.tags)
        placed: dict[str, Any] = {"region": region, "tags": tags}  # every regional child's
        capture = plan.config.dataCapture.enabled
        for note in plan.notes:
            pulumi.log.warn(note, resource=self)

        kms_key_arn: Optional[pulumi.Input[str]] = plan.config.kmsKeyArn
        if kms_key_arn is None and (variant.ebs_storage or capture):
            kms_key_arn = aws.kms.Key(
                f"{name}-kms",
                description=f"SageMaker endpoint {endpoint_name}: ML storage volumes and captured data",
                enable_key_rotation=True,
                deletion_window_in_days=30,
                **placed,
                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=capture),
            ).arn
        bucket = capture_bucket(name, plan, kms_key_arn, self) if capture else None

        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        role = aws.iam.Role(
            f"{name}-role",
            description=f"Execution role of SageMaker endpoint {endpoint_name}",
            assume_role_policy=trust_policy(account, region, partition(region)),
            tags=tags,
            opts=child,
        )
        role_policy = aws.iam.RolePolicy(
            f"{name}-role-policy",
            role=role.id,
            policy=execution_policy(plan, role.arn, kms_key_arn, bucket),
            opts=child,
        )

        model = sm.Model(
            f"{name}-model",
            execution_role_arn=role.arn,
            primary_container=primary_container(plan.container, args.hf_token),
            enable_network_isolation=plan.container.enable_network_isolation,
            **placed,
            # The role's permissions have no data edge to the model, but SageMaker pulls with them.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role_policy], retain_on_delete=True),
        )
        data_capture = None
        if bucket is not None:
            data_capture = sm.EndpointConfigurationDataCaptureConfigArgs(
                enable_capture=True,
                initial_sampling_percentage=plan.config.dataCapture.samplingPercentage,
                destination_s3_uri=pulumi.Output.concat("s3://", bucket.id, f"/{CAPTURE_PREFIX}"),
                kms_key_id=kms_key_arn,
                capture_options=[
                    sm.EndpointConfigurationDataCaptureConfigCaptureOptionArgs(capture_mode=mode)
                    for mode in ("Input", "Output")
                ],
            )
        endpoint_config = sm.EndpointConfiguration(
            f"{name}-config",
            production_variants=[
                sm.EndpointConfigurationProductionVariantArgs(
                    variant_name=plan.config.variantName,
                    model_name=model.name,
                    instance_type=plan.config.instanceType,
                    initial_instance_count=plan.config.initialInstanceCount,
                    model_data_download_timeout_in_seconds=variant.model_data_download_timeout,
                    container_startup_health_check_timeout_in_seconds=variant.container_startup_health_check_timeout,
                    volume_size_in_gb=variant.volume_size_gb,
                    inference_ami_version=variant.inference_ami_version,
                    routing_configs=[
                        sm.EndpointConfigurationProductionVariantRoutingConfigArgs(
                            routing_strategy="LEAST_OUTSTANDING_REQUESTS"
                        )
                    ],
                )
            ],
            # Local NVMe storage is hardware-encrypted; SageMaker fails the config if a volume key is given.
            kms_key_arn=kms_key_arn if variant.ebs_storage else None,
            data_capture_config=data_capture,
            **placed,
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
        )

        alarms = rollback_alarms(name, plan, endpoint_config.name, child)
        # Auto-rollback reads the alarms' state with the endpoint's execution role (SageMaker developer guide,
        # "Auto-Rollback Configuration and Monitoring"); only these alarms.
        statement = allow("ReadRollbackAlarms", "cloudwatch:DescribeAlarms", [alarm.arn for alarm in alarms])
        alarm_policy = aws.iam.RolePolicy(
            f"{name}-rollback-policy",
            role=role.id,
            policy=pulumi.Output.json_dumps({"Version": "2012-10-17", "Statement": [statement]}),
            opts=child,
        )
        deployment, shifting, percent = plan.config.deployment, plan.shifting, "CAPACITY_PERCENT"
        endpoint = sm.Endpoint(
            f"{name}-endpoint",
            name=endpoint_name,
            endpoint_config_name=endpoint_config.name,
            deployment_config=sm.EndpointDeploymentConfigArgs(
                blue_green_update_policy=sm.EndpointDeploymentConfigBlueGreenUpdatePolicyArgs(
                    # CANARY and LINEAR shift a percent of the capacity; the step not taken is left unset.
                    traffic_routing_configuration=sm.EndpointDeploymentConfigBlueGreenUpdatePolicyTrafficRoutingConfigurationArgs(
                        type=shifting,
                        wait_interval_in_seconds=deployment.waitIntervalSeconds,
                        canary_size=sm.EndpointDeploymentConfigBlueGreenUpdatePolicyTrafficRoutingConfigurationCanarySizeArgs(
                            type=percent, value=deployment.canarySize
                        )
                        if shifting == "CANARY"
                        else None,
                        linear_step_size=sm.EndpointDeploymentConfigBlueGreenUpdatePolicyTrafficRoutingConfigurationLinearStepSizeArgs(
                            type=percent, value=deployment.linearStepSize
                        )
                        if shifting == "LINEAR"
                        else None,
                    ),
                    termination_wait_in_seconds=deployment.terminationWaitSeconds,
                    maximum_execution_timeout_in_seconds=deployment.maximumExecutionTimeoutSeconds,
                ),
                auto_rollback_configuration=sm.EndpointDeploymentConfigAutoRollbackConfigurationArgs(
                    alarms=[
                        sm.EndpointDeploymentConfigAutoRollbackConfigurationAlarmArgs(alarm_name=alarm.name)
                        for alarm in alarms
                    ]
                ),
            ),
            **placed,
            # Rollback reads the alarms with the role: the permission must exist before any deployment.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[alarm_policy]),
        )
        scaling = plan.config.autoscaling
        if scaling.enabled:  # target tracking on invocations per instance, with a slower scale-in than scale-out
            target = aws.appautoscaling.Target(
                f"{name}-scaling-target",
                service_namespace="sagemaker",
                scalable_dimension="sagemaker:variant:DesiredInstanceCount",
                resource_id=pulumi.Output.concat("endpoint/", endpoint.name, "/variant/", plan.config.variantName),
                min_capacity=scaling.minCapacity,
                max_capacity=scaling.maxCapacity,
                **placed,
                opts=child,
            )
            aws.appautoscaling.Policy(
                f"{name}-scaling-policy",
                name=f"{endpoint_name}-invocations",
                policy_type="TargetTrackingScaling",
                service_namespace=target.service_namespace,
                scalable_dimension=target.scalable_dimension,
                resource_id=target.resource_id,
                target_tracking_scaling_policy_configuration=aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationArgs(
                    target_value=scaling.targetInvocationsPerInstance,
                    predefined_metric_specification=aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationPredefinedMetricSpecificationArgs(
                        predefined_metric_type="SageMakerVariantInvocationsPerInstance"
                    ),
                    scale_in_cooldown=scaling.scaleInCooldown,
                    scale_out_cooldown=scaling.scaleOutCooldown,
                    disable_scale_in=False,
                ),
                region=region,
                opts=child,
            )

        self.endpoint_name = endpoint.name
        self.endpoint_arn = endpoint.arn
        self.role_arn = role.arn
        self.register_outputs(
            {
                "endpointName": self.endpoint_name,
                "endpointArn": self.endpoint_arn,
                "invokeUrl": plan.endpoint.url,
                "roleArn": self.role_arn,
            }
        )
