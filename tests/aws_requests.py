"""Recorded pulumi-aws inputs -> the EC2 / EKS API requests the provider sends (terraform-provider-aws
expands the same fields), judged by botocore: `ParamValidator` with the service model of the pinned
botocore (required members, types, ranges) plus the model's enums, which the validator leaves out.

A field the translation does not know fails loudly, so a new input cannot slip past unvalidated.
"""

from __future__ import annotations

import functools
from typing import Any

import botocore.session
from botocore.model import OperationModel, Shape
from botocore.validate import ParamValidator

# pulumi input names whose API member is not the input capitalised.
RENAMED = {"securityGroups": "Groups", "vpcSecurityGroupIds": "SecurityGroupIds"}
# Template-level inputs: API member of CreateLaunchTemplate, or None when the provider sends it elsewhere.
LAUNCH_TEMPLATE_TOP = {"description": "VersionDescription", "tags": "TagSpecifications", "updateDefaultVersion": None}
NODE_GROUP = {
    "clusterName": "clusterName",
    "nodeGroupNamePrefix": "nodegroupName",
    "nodeRoleArn": "nodeRole",
    "subnetIds": "subnets",
    "instanceTypes": "instanceTypes",
    "amiType": "amiType",
    "capacityType": "capacityType",
    "version": "version",
    "scalingConfig": "scalingConfig",
    "launchTemplate": "launchTemplate",
    "labels": "labels",
    "taints": "taints",
    "updateConfig": "updateConfig",
    "tags": "tags",
}


@functools.cache
def operation(service: str, name: str) -> OperationModel:
    return botocore.session.get_session().get_service_model(service).operation_model(name)


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def _ec2(value: Any) -> Any:
    """camelCase pulumi structures -> EC2's PascalCase members (`tags` maps become Key/Value lists)."""
    if isinstance(value, list):
        return [_ec2(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        RENAMED.get(key, key[0].upper() + key[1:]): _tags(item) if key == "tags" else _ec2(item)
        for key, item in value.items()
    }


def _typed(value: Any, shape: Shape, path: str) -> Any:
    """Values as the API types them (the provider sends `"true"` as a boolean, mock numbers as integers);
    a member the shape does not have is an error of the translation, not left out."""
    kind = shape.type_name
    if kind == "structure":
        unknown = sorted(set(value) - set(shape.members))
        if unknown:
            raise KeyError(f"{path}: {unknown} are not members of {shape.name}")
        return {key: _typed(item, shape.members[key], f"{path}.{key}") for key, item in value.items()}
    if kind == "list":
        return [_typed(item, shape.member, f"{path}[]") for item in value]
    if kind == "map":
        return {key: _typed(item, shape.value, f"{path}.{key}") for key, item in value.items()}
    if kind in ("integer", "long"):
        return int(value)
    if kind == "boolean":
        return value if isinstance(value, bool) else value == "true"
    return value


def launch_template_request(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    data = {key: value for key, value in inputs.items() if key not in LAUNCH_TEMPLATE_TOP}
    request: dict[str, Any] = {"LaunchTemplateName": name, "LaunchTemplateData": _ec2(data)}
    if "description" in inputs:
        request["VersionDescription"] = inputs["description"]
    if "tags" in inputs:
        request["TagSpecifications"] = [{"ResourceType": "launch-template", "Tags": _tags(inputs["tags"])}]
    return _typed(request, operation("ec2", "CreateLaunchTemplate").input_shape, "CreateLaunchTemplate")


def node_group_request(inputs: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(inputs) - set(NODE_GROUP))
    if unknown:
        raise KeyError(f"NodeGroup inputs {unknown} have no CreateNodegroup member here")
    request = {NODE_GROUP[key]: value for key, value in inputs.items()}
    request["nodegroupName"] = f"{request['nodegroupName']}20260101000000000000000001"  # the provider's prefix suffix
    return _typed(request, operation("eks", "CreateNodegroup").input_shape, "CreateNodegroup")


def enum_errors(value: Any, shape: Shape, path: str = "") -> list[str]:
    if shape.type_name == "structure":
        return [e for key, item in value.items() for e in enum_errors(item, shape.members[key], f"{path}.{key}")]
    if shape.type_name == "list":
        return [e for item in value for e in enum_errors(item, shape.member, f"{path}[]")]
    enum = getattr(shape, "enum", None)
    return [f"{path}: {value!r} not in {enum}"] if enum and value not in enum else []


def problems(service: str, name: str, request: dict[str, Any]) -> list[str]:
    """Everything botocore says about the request (empty when AWS's own model accepts it)."""
    shape = operation(service, name).input_shape
    report = ParamValidator().validate(request, shape)
    return ([report.generate_report()] if report.has_errors() else []) + enum_errors(request, shape)
