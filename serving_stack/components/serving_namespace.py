"""The namespace the serving workloads live in, with the Hugging Face token Secret they read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from serving_stack.names import HF_TOKEN_KEY, HF_TOKEN_SECRET, TypeTokens


@dataclass(frozen=True)
class ServingNamespaceArgs:
    namespace: str
    hf_token: pulumi.Input[str]


class ServingNamespace(pulumi.ComponentResource):
    """Namespace + `hf-token-secret` (key `HF_TOKEN`, what the upstream download Job's `envFrom` expects)."""

    namespace_name: pulumi.Output[str]
    hf_token_secret_name: pulumi.Output[str]

    def __init__(self, name: str, args: ServingNamespaceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.SERVING_NAMESPACE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": args.namespace, "labels": {"app.kubernetes.io/part-of": "nemotron-lightning"}},
            opts=child,
        )
        secret = k8s.core.v1.Secret(
            f"{name}-hf-token",
            metadata={"name": HF_TOKEN_SECRET, "namespace": namespace.metadata.name},
            type="Opaque",
            string_data={HF_TOKEN_KEY: pulumi.Output.secret(args.hf_token)},
            opts=child,
        )
        self.namespace_name = namespace.metadata.name
        self.hf_token_secret_name = secret.metadata.name
        self.register_outputs({"namespace": self.namespace_name, "hfTokenSecret": self.hf_token_secret_name})
