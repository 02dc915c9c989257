"""The versioned contract of stack outputs that applications consume (changes: CHANGELOG.md beside it).

`schemas/stack-outputs.v<major>.schema.json` is generated from `StackOutputs` (`make schema`) and a test keeps
the two equal. Additive, optional fields bump the minor version, and a document of an earlier minor still
validates; anything else bumps the major and replaces the schema file (one file per major; the previous one
stays in git history, where CHANGELOG.md points).

The gateway's part (`StackOutputs.gateway`, since 1.1) is one URL for every model the stack serves, and where its
key is: the Kubernetes Secret `auth` names, or the secret stack output `gatewayApiKey` (2.0) for apps outside the
cluster's namespaces. That object itself never holds the key, so it stays a plain (not secret) output.
"""

from __future__ import annotations

from typing import Final, Literal, Optional

import pydantic

CONTRACT_VERSION: Final = "2.0"
MAJOR_VERSION: Final = CONTRACT_VERSION.partition(".")[0]
ANSWERED_BY_HEADERS = ("x-litellm-model-group", "x-litellm-model-id")


class _Contract(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class ServingEndpoint(_Contract):
    """One way to call the model."""

    id: str = pydantic.Field(description="Catalog target id (dynamo) or endpoint name (sagemaker).")
    kind: Literal["dynamo", "sagemaker"]
    servedModelName: str
    url: str = pydantic.Field(description="OpenAI-compatible base URL (dynamo) or invoke URL (sagemaker).")
    gpus: int = pydantic.Field(ge=0, description="GPUs the endpoint uses at its configured replica count.")
    expectedOutputTokensPerSecond: Optional[float] = pydantic.Field(
        default=None, description="Published output tok/s per GPU x GPUs used; null when unpublished."
    )
    expectedTokensPerSecondPerUser: Optional[float] = None
    meetsPublishedCriteria: Optional[bool] = pydantic.Field(
        default=None, description="tok/s/user and TTFT p50 meet the catalog's published criteria."
    )
    region: Optional[str] = pydantic.Field(default=None, description="AWS region of a sagemaker endpoint.")
    variant: Optional[str] = pydantic.Field(default=None, description="Production variant of a sagemaker endpoint.")
    instanceType: Optional[str] = pydantic.Field(default=None, description="SageMaker instance type (sagemaker).")
    instanceCount: Optional[int] = pydantic.Field(
        default=None, ge=1, description="Initial instance count (sagemaker); autoscaling moves it within min..max."
    )
    usdPerHour: Optional[float] = pydantic.Field(
        default=None,
        description="Approximate on-demand price x instanceCount (sagemaker); null when the price is unknown.",
    )
    usdPerMillionOutputTokens: Optional[float] = pydantic.Field(
        default=None,
        ge=0,
        description="Price of 1M output tokens at the published output tok/s per GPU (dynamo), on the instance and "
        "capacity type of the target's node pool, or the cheapest on-demand instance type of its GPU when the stack "
        "knows no pool; a floor (a replica set busy the whole hour). Null when unpublished or unpriced.",
    )
    throughputBasis: Optional[str] = pydantic.Field(
        default=None,
        description="What expectedOutputTokensPerSecond, expectedTokensPerSecondPerUser and usdPerMillionOutputTokens "
        "rest on (dynamo): the published row's speculative-decoding acceptance (measured with synthetic rejection "
        "sampling at a fixed acceptance length) or the stack's targets[].acceptanceLength they are scaled to, or a "
        "measurement without speculative decoding.",
    )


class NodePool(_Contract):
    """Size and on-demand list-price cost of one GPU node pool: the sizes are the pool's config
    (`aws.nodePools[].minSize`, `desiredSize`, `maxSize`); GPUs are `gpusPerNode` x nodes. Prices are an
    upper bound for spot and an estimate for Capacity Blocks; null where no price is published."""

    pool: str
    instanceType: Optional[str]
    capacityType: str
    gpusPerNode: int = pydantic.Field(ge=0)
    minSize: int = pydantic.Field(ge=0, description="Nodes at least.")
    desiredSize: int = pydantic.Field(ge=0, description="Nodes at `pulumi up`.")
    maxSize: int = pydantic.Field(ge=0, description="Nodes at most.")
    usdPerHour: Optional[float] = pydantic.Field(description="At desiredSize nodes.")
    usdPerHourMin: Optional[float] = pydantic.Field(description="At minSize nodes.")
    usdPerHourMax: Optional[float] = pydantic.Field(description="At maxSize nodes.")


class GatewayAuth(_Contract):
    """Send `Authorization: Bearer <key>`; the key is in this Kubernetes Secret (a Pulumi secret in state)."""

    scheme: Literal["bearer"] = "bearer"
    secretNamespace: str
    secretName: str
    secretKey: str


class GatewayModel(_Contract):
    name: str = pydantic.Field(description="What to send as `model`.")
    servedModelName: str = pydantic.Field(description="The model that answers when nothing has failed over.")
    kind: Literal["dynamo", "sagemaker"]
    fallbacks: list[str] = pydantic.Field(description="Model names tried in order when this one cannot answer.")
    degraded: bool = pydantic.Field(description="Serves another model as the last resort of other models.")


class GatewayOutput(_Contract):
    url: str = pydantic.Field(description="OpenAI-compatible base URL (in-cluster), ending in /v1.")
    models: list[GatewayModel]
    auth: GatewayAuth
    answeredByHeaders: list[str] = pydantic.Field(
        default=list(ANSWERED_BY_HEADERS),
        description="Response headers naming the model group and the deployment that answered; the response's "
        "`model` names the model that answered.",
    )


class Cluster(_Contract):
    name: str
    endpoint: str


class StackOutputs(_Contract):
    contractVersion: Literal["2.0"] = CONTRACT_VERSION
    endpoints: list[ServingEndpoint]
    nodePools: list[NodePool] = []
    cluster: Optional[Cluster] = pydantic.Field(default=None, description="Only when the stack creates the cluster.")
    kubeconfig: Optional[str] = pydantic.Field(default=None, description='A Pulumi secret; "[secret]" offline.')
    gateway: Optional[GatewayOutput] = pydantic.Field(
        default=None, description="One OpenAI-compatible URL with failover (null when disabled)."
    )
    gatewayApiKey: Optional[str] = pydantic.Field(
        default=None,
        description="The gateway's key (the same as its Secret `gateway.auth`) as a Pulumi secret, for apps that read it "
        'through a StackReference; "[secret]" offline, null when the gateway is off.',
    )


def frontend_url(dgd_name: str, namespace: str) -> str:
    """The in-cluster URL of a DGD's frontend Service (`<dgd>-frontend`, port 8000)."""
    return f"http://{dgd_name}-frontend.{namespace}.svc.cluster.local:8000/v1"
