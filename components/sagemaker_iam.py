"""The SageMaker endpoint's execution role: a trust policy for SageMaker in this account and region, and
least-privilege inline policies (pull the one image, read the artifacts, write logs, metrics and captured
data; read the rollback alarms, which blue/green auto-rollback needs: `cloudwatch:DescribeAlarms`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional

import pulumi
import pulumi_aws as aws

from components.iam import assume_role_policy
from serving_stack.plan.sagemaker_spec import ModelContainer

ENDPOINT_METRICS_NAMESPACE = "/aws/sagemaker/Endpoints"
CAPTURE_PREFIX = "capture"


SAGEMAKER_SERVICE = "sagemaker.amazonaws.com"


def partition(region: str) -> str:
    return "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"


def _split_s3(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def _artifact_read_statements(container: ModelContainer, part: str) -> list[dict[str, Any]]:
    """GetObject on the model artifacts only, and ListBucket limited to their prefixes."""
    sources = [container.model_data] if container.model_data is not None else []
    sources += [source.s3 for source in container.additional_model_data]
    if not sources:
        return []
    objects, prefixes = [], defaultdict(list)
    for data in sources:
        bucket, key = _split_s3(data.s3_uri)
        pattern = f"{key}*" if data.s3_data_type == "S3Prefix" else key
        objects.append(f"arn:{part}:s3:::{bucket}/{pattern}")
        prefixes[bucket].append(pattern)
    statements: list[dict[str, Any]] = [
        {"Sid": "ReadModelArtifacts", "Effect": "Allow", "Action": "s3:GetObject", "Resource": objects}
    ]
    for index, (bucket, patterns) in enumerate(sorted(prefixes.items())):
        statements.append(
            {
                "Sid": f"ListModelArtifacts{index}",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": f"arn:{part}:s3:::{bucket}",
                "Condition": {"StringLike": {"s3:prefix": patterns}},
            }
        )
    return statements


def _ecr_repository_arn(image: str, part: str) -> str:
    """`<account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>` -> the repository ARN."""
    registry, _, reference = image.partition("/")
    account, _, _, region = registry.split(".")[:4]
    repository = reference.partition("@")[0].partition(":")[0]
    return f"arn:{part}:ecr:{region}:{account}:repository/{repository}"


def execution_policy(
    container: ModelContainer,
    endpoint_name: str,
    region: str,
    part: str,
    role_arn: pulumi.Output[str],
    kms_key_arn: Optional[pulumi.Input[str]],
    capture_bucket: Optional[aws.s3.Bucket],
) -> pulumi.Output[str]:
    """What the endpoint's instances do with the role: pull the image, read the artifacts, write logs
    and metrics, and write captured data. No managed policy (never AmazonSageMakerFullAccess)."""
    account = role_arn.apply(lambda arn: arn.split(":")[4])
    log_group = pulumi.Output.concat(
        f"arn:{part}:logs:{region}:", account, f":log-group:/aws/sagemaker/Endpoints/{endpoint_name}"
    )
    statements: list[Any] = [
        {"Sid": "PullImageToken", "Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        {
            "Sid": "PullImage",
            "Effect": "Allow",
            "Action": ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": _ecr_repository_arn(container.image, part),
        },
        {
            "Sid": "WriteLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
            "Resource": [log_group, pulumi.Output.concat(log_group, ":*")],
        },
        {
            "Sid": "PutEndpointMetrics",
            "Effect": "Allow",
            "Action": "cloudwatch:PutMetricData",
            "Resource": "*",
            "Condition": {"StringEquals": {"cloudwatch:namespace": ENDPOINT_METRICS_NAMESPACE}},
        },
        *_artifact_read_statements(container, part),
    ]
    if capture_bucket is not None:
        statements += [
            {
                "Sid": "WriteCapturedData",
                "Effect": "Allow",
                "Action": "s3:PutObject",
                "Resource": pulumi.Output.concat(f"arn:{part}:s3:::", capture_bucket.id, f"/{CAPTURE_PREFIX}/*"),
            },
            {
                "Sid": "EncryptCapturedData",
                "Effect": "Allow",
                "Action": ["kms:Encrypt", "kms:GenerateDataKey"],
                "Resource": kms_key_arn,
            },
        ]
    return pulumi.Output.json_dumps({"Version": "2012-10-17", "Statement": statements})


def trust_policy(account: pulumi.Output[str], region: str, part: str) -> pulumi.Output[str]:
    """SageMaker may assume the role only on behalf of this account's resources in this region."""
    return account.apply(
        lambda account_id: assume_role_policy(
            SAGEMAKER_SERVICE, source_account=account_id, source_arn=f"arn:{part}:sagemaker:{region}:{account_id}:*"
        )
    )


def rollback_policy(alarm_arns: list[pulumi.Output[str]]) -> pulumi.Output[str]:
    """Auto-rollback reads the alarms' state with the endpoint's execution role (SageMaker developer guide,
    "Auto-Rollback Configuration and Monitoring"); only these alarms."""
    return pulumi.Output.json_dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "ReadRollbackAlarms",
                    "Effect": "Allow",
                    "Action": "cloudwatch:DescribeAlarms",
                    "Resource": alarm_arns,
                }
            ],
        }
    )
