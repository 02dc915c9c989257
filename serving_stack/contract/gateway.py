"""The gateway's part of the outputs contract (`StackOutputs.gateway`, since 1.1): one URL for every model
the stack serves, and where its key is: the Kubernetes Secret `auth` names, or the secret stack output
`gatewayApiKey` (2.0) for apps outside the cluster's namespaces. This object itself never holds the key, so
it stays a plain (not secret) output.
"""

from __future__ import annotations

from typing import Literal

import pydantic

ANSWERED_BY_HEADERS = ("x-litellm-model-group", "x-litellm-model-id")


class _Contract(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


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
