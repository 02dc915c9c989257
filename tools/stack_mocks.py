"""What the mock engine answers in place of AWS and Kubernetes: deterministic ids, ARNs and the
provider-computed outputs components read while the program runs, so two renders are byte-identical."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serving_stack.pulumi_private import MockCallArgs, MockResourceArgs, Mocks

MOCK_ACCOUNT = "123456789012"
MOCK_REGION = "us-east-1"
# ARN resource parts that are not `<resource type>/<name>` (the AWS service authorization reference), so an
# IAM statement naming the mock's ARN reads as it would with the real one.
ARN_RESOURCES: dict[str, Callable[[str], str]] = {
    "aws:cloudwatch/metricAlarm:MetricAlarm": lambda name: f"alarm:{name}",
}


def _mock_outputs(type_token: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Deterministic stand-ins for the outputs a provider computes. Only those: with preview=False the SDK
    gives every input the engine returns no output for its input value (`rpc.resolve_outputs`), so echoing
    the inputs back would only serialize and deserialize each resource's inputs twice more."""
    package, module, kind = ([*type_token.split(":"), "", ""])[:3]
    outputs: dict[str, Any] = {}
    if package == "aws":
        service = module.split("/")[0]
        arn_resource = ARN_RESOURCES[type_token](name) if type_token in ARN_RESOURCES else f"{kind.lower()}/{name}"
        if "arn" not in inputs:
            outputs["arn"] = f"arn:aws:{service}:{MOCK_REGION}:{MOCK_ACCOUNT}:{arn_resource}"
        if "name" not in inputs:
            outputs["name"] = name
    # Provider-computed outputs that components read while the program runs (kubeconfig, node groups).
    computed: dict[str, Callable[[], dict[str, Any]]] = {
        "aws:eks/cluster:Cluster": lambda: {
            "endpoint": f"https://{name}.gr7.{MOCK_REGION}.eks.amazonaws.com",
            "certificateAuthority": {"data": "bW9jay1jbHVzdGVyLWNh"},
            "vpcConfig": {**inputs.get("vpcConfig", {}), "clusterSecurityGroupId": f"sg-{name}"},
        },
        "aws:ec2/launchTemplate:LaunchTemplate": lambda: {"latestVersion": 1},
        "aws:eks/nodeGroup:NodeGroup": lambda: {"resources": [{"autoscalingGroups": [{"name": f"eks-{name}-asg"}]}]},
        "aws:fsx/lustreFileSystem:LustreFileSystem": lambda: {
            "dnsName": f"{name}-id.fsx.{MOCK_REGION}.amazonaws.com",
            "mountName": "mockmnt",
        },
        # The stack's own last deployment: an offline render has none (a first `up`).
        "pulumi:pulumi:StackReference": lambda: {"outputs": {}, "secretOutputNames": []},
    }
    if type_token in computed:
        outputs.update(computed[type_token]())
    return outputs


class StackMocks(Mocks):
    """Answers registrations and invokes with deterministic values, so two renders are byte-identical."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", _mock_outputs(args.typ, args.name, args.inputs)

    def call(self, args: MockCallArgs) -> Any:
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": MOCK_ACCOUNT, "arn": f"arn:aws:iam::{MOCK_ACCOUNT}:user/mock", "userId": "MOCK"}
        return {}, None
