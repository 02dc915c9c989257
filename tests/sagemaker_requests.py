"""The AWS API requests a recorded SageMakerEndpoint component turns into, and their validation against
botocore's service models.

`requests_of` maps each recorded resource to the call the provider makes (CreateRole, PutRolePolicy,
CreateModel, CreateEndpointConfig, PutMetricAlarm, CreateEndpoint, RegisterScalableTarget, PutScalingPolicy,
and the S3/KMS calls of the capture bucket): key by key (`to_api`), nothing dropped but what only Pulumi
reads, tags shaped as each operation's input shape says. `validation_errors` runs botocore's own
`ParamValidator` and then the constraints it leaves out (enums, maxima, patterns, lengths), so a value the
API refuses (an instance type, an AMI version, a 28800 s timeout) fails here, independent of moto.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Optional

import botocore.session
from botocore.model import OperationModel, Shape
from botocore.validate import ParamValidator
from sagemaker_helpers import PULUMI_ONLY, inputs, to_api

from tools.mock_runtime import MOCK_REGION, ProgramRun

# type token -> (service, operation, parameter that takes the resource's name, renames of recorded keys)
OPERATIONS: dict[str, tuple[str, str, Optional[str], dict[str, str]]] = {
    "aws:iam/role:Role": ("iam", "CreateRole", "RoleName", {"assumeRolePolicy": "AssumeRolePolicyDocument"}),
    "aws:iam/rolePolicy:RolePolicy": (
        "iam",
        "PutRolePolicy",
        "PolicyName",
        {"role": "RoleName", "policy": "PolicyDocument"},
    ),
    "aws:kms/key:Key": ("kms", "CreateKey", None, {}),
    "aws:s3/bucket:Bucket": ("s3", "CreateBucket", "Bucket", {}),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": (
        "s3",
        "PutBucketEncryption",
        None,
        {},
    ),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": ("s3", "PutPublicAccessBlock", None, {}),
    "aws:sagemaker/model:Model": ("sagemaker", "CreateModel", "ModelName", {}),
    "aws:sagemaker/endpointConfiguration:EndpointConfiguration": (
        "sagemaker",
        "CreateEndpointConfig",
        "EndpointConfigName",
        {},
    ),
    "aws:sagemaker/endpoint:Endpoint": ("sagemaker", "CreateEndpoint", "EndpointName", {}),
    "aws:cloudwatch/metricAlarm:MetricAlarm": ("cloudwatch", "PutMetricAlarm", "AlarmName", {}),
    "aws:appautoscaling/target:Target": ("application-autoscaling", "RegisterScalableTarget", None, {}),
    "aws:appautoscaling/policy:Policy": ("application-autoscaling", "PutScalingPolicy", "PolicyName", {}),
}
REFERENCED_BY_ID = {"aws:iam/role:Role", "aws:s3/bucket:Bucket"}
# Inputs the provider sends with another call than the one that creates the resource.
LATER_CALLS = {"aws:kms/key:Key": {"enableKeyRotation", "deletionWindowInDays"}, "aws:s3/bucket:Bucket": {"tags"}}


@dataclass(frozen=True)
class Request:
    resource: str
    service: str
    operation: str
    params: dict[str, Any]


@functools.cache
def operation_model(service: str, operation: str) -> OperationModel:
    return botocore.session.get_session().get_service_model(service).operation_model(operation)


def _real_arns(value: Any) -> Any:
    """The mock issues every ARN with a region; IAM ARNs have none (and SageMaker's role pattern says so)."""
    if isinstance(value, str):
        return re.sub(rf"arn:aws:iam:{MOCK_REGION}:", "arn:aws:iam::", value)
    if isinstance(value, dict):
        return {k: _real_arns(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_real_arns(v) for v in value]
    return value


def _tags(tags: dict[str, str], shape: Shape) -> Any:
    """Tags as the operation takes them: a map, or a list of {Key, Value} (or {TagKey, TagValue})."""
    if shape.type_name == "map":
        return dict(tags)
    key_name, value_name = list(shape.member.members)[:2]  # type: ignore[attr-defined]
    return [{key_name: k, value_name: v} for k, v in sorted(tags.items())]


def _shape_specials(type_token: str, params: dict[str, Any], recorded: dict[str, Any]) -> dict[str, Any]:
    if type_token == "aws:s3/bucket:Bucket" and recorded.get("region", "us-east-1") != "us-east-1":
        params["CreateBucketConfiguration"] = {"LocationConstraint": recorded["region"]}
    if type_token.startswith("aws:s3/bucketServerSideEncryption"):
        params = {"Bucket": params["Bucket"], "ServerSideEncryptionConfiguration": {"Rules": params["Rules"]}}
    if type_token.startswith("aws:s3/bucketPublicAccessBlock"):
        bucket = params.pop("Bucket")
        params = {"Bucket": bucket, "PublicAccessBlockConfiguration": params}
    return params


def request_of(run: ProgramRun, name: str) -> Request:
    resource = run.named(name)
    service, operation, name_param, renames = OPERATIONS[resource.type]
    recorded = _real_arns(inputs(run, name))
    dropped = PULUMI_ONLY | LATER_CALLS.get(resource.type, set()) | {"tags"}
    params = to_api({renames.get(k, k): v for k, v in recorded.items() if k not in dropped})
    if name_param is not None:  # auto-named roles and buckets are referenced by id: the mock's id is their name
        params[name_param] = recorded.get("name", f"{name}-id" if resource.type in REFERENCED_BY_ID else name)
    input_shape = operation_model(service, operation).input_shape
    if recorded.get("tags") and "Tags" in input_shape.members and "tags" not in LATER_CALLS.get(resource.type, set()):
        params["Tags"] = _tags(recorded["tags"], input_shape.members["Tags"])
    return Request(name, service, operation, _shape_specials(resource.type, params, recorded))


def requests_of(run: ProgramRun, component: str) -> list[Request]:
    """Every custom resource of a component as its API request, in registration order."""
    return [request_of(run, r.name) for r in run.resources if r.custom and r.parent.endswith(f"::{component}")]


def _constraint_errors(value: Any, shape: Shape, path: str) -> list[str]:
    """What ParamValidator does not check: enums, maxima, string patterns and lengths."""
    meta, errors = shape.metadata, []
    if shape.type_name == "structure" and isinstance(value, dict):
        for key, child in value.items():
            errors += _constraint_errors(child, shape.members[key], f"{path}.{key}")  # type: ignore[attr-defined]
    elif shape.type_name == "list" and isinstance(value, list):
        errors += (
            [f"{path}: {len(value)} items, at most {meta['max']}"] if "max" in meta and len(value) > meta["max"] else []
        )
        for index, item in enumerate(value):
            errors += _constraint_errors(item, shape.member, f"{path}[{index}]")  # type: ignore[attr-defined]
    elif shape.type_name == "map" and isinstance(value, dict):
        for key, item in value.items():
            errors += _constraint_errors(key, shape.key, f"{path} key")  # type: ignore[attr-defined]
            errors += _constraint_errors(item, shape.value, f"{path}.{key}")  # type: ignore[attr-defined]
    elif shape.type_name == "string" and isinstance(value, str):
        if shape.enum and value not in shape.enum:
            errors.append(f"{path}: {value!r} is not one of the API's values")
        if "max" in meta and len(value) > meta["max"]:
            errors.append(f"{path}: {len(value)} characters, at most {meta['max']}")
        pattern = meta.get("pattern")
        if pattern and _compiles(pattern) and not re.fullmatch(pattern, value, re.DOTALL):
            errors.append(f"{path}: {value!r} does not match {pattern}")
    elif (
        shape.type_name in ("integer", "long", "float", "double")
        and isinstance(value, (int, float))
        and "max" in meta
        and value > meta["max"]
    ):
        errors.append(f"{path}: {value} is above the API's maximum {meta['max']}")
    return errors


@functools.cache
def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def validation_errors(request: Request) -> list[str]:
    shape = operation_model(request.service, request.operation).input_shape
    report = ParamValidator().validate(request.params, shape)
    errors = [line for line in report.generate_report().splitlines() if line.strip()] if report.has_errors() else []
    return errors + _constraint_errors(request.params, shape, request.operation)
