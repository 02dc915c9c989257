"""The namespace the serving workloads live in (created by the stack, or the cluster's own with
`kubernetes.createNamespace: false`), with the Secrets its pods read: the Hugging Face token (the download
Job) and the registry pull Secret (every pod, when the images are not public)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from serving_stack.names import HF_TOKEN_KEY, HF_TOKEN_SECRET, PART_OF_LABEL, PROJECT, TypeTokens
from serving_stack.plan.stack import ServingPlan

# The component's input stating the cluster namespace it uses (`kubernetes.createNamespace: false`) and the
# Pod Security level that namespace enforces (`kubernetes.namespacePodSecurity`).
EXISTING_NAMESPACE = "existingNamespace"
NGC_USERNAME = "$oauthtoken"  # NGC's fixed user name for API-key logins to nvcr.io
# Pod Security admission (kubernetes.io/docs/concepts/security/pod-security-admission/), stated rather than
# left to the cluster's default: the RDMA workers add IPC_LOCK and SYS_RESOURCE and the prewarm DaemonSet
# mounts its node-local state directory, which `baseline` forbids, so the namespace enforces `privileged`;
# `warn` and `audit` at `baseline` show what else drifts. The policy pack's least-privilege rule narrows what
# those pods may take, and its pod-security-standards rule accepts `privileged` only on this component's
# namespace.
POD_SECURITY_LABELS = {
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/warn": "baseline",
    "pod-security.kubernetes.io/audit": "baseline",
}


@dataclass(frozen=True)
class ServingNamespaceArgs:
    """`plan.model_cache.retainOnDelete`: `pulumi destroy` forgets the namespace instead of deleting it (and with
    it every claim inside)."""

    plan: ServingPlan  # the namespace, the pull Secret's name and registry (`dynamo`)
    hf_token: Optional[pulumi.Input[str]] = None  # the Hugging Face token, a Pulumi secret; None: no token Secret
    registry_key: Optional[pulumi.Input[str]] = None  # the registry key, a Pulumi secret; None: no pull Secret


def docker_config_json(server: str, api_key: pulumi.Input[str]) -> pulumi.Output[str]:
    """`.dockerconfigjson` for one registry, as a secret."""

    def render(key: str) -> str:
        auth = base64.b64encode(f"{NGC_USERNAME}:{key}".encode()).decode()
        return json.dumps({"auths": {server: {"username": NGC_USERNAME, "password": key, "auth": auth}}})

    return pulumi.Output.secret(pulumi.Output.from_input(api_key).apply(render))


class ServingNamespace(pulumi.ComponentResource):
    """The Secrets are created with the namespace, so the pods that need them never start before them."""

    namespace_name: pulumi.Output[str]
    hf_token_secret_name: Optional[pulumi.Output[str]]

    def __init__(self, name: str, args: ServingNamespaceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        # The cluster's namespace: its declared Pod Security level, for the policy pack's pod-security-standards
        # rule, which takes a level stated by this component as the level of a namespace the stack does not make.
        declared = None
        if not args.plan.create_namespace and args.plan.namespace_pod_security is not None:
            level = args.plan.namespace_pod_security
            declared = {EXISTING_NAMESPACE: {"name": args.plan.namespace, "enforce": level}}
        super().__init__(TypeTokens.SERVING_NAMESPACE, name, declared, opts)
        child = pulumi.ResourceOptions(parent=self)
        if args.plan.create_namespace:
            namespace = k8s.core.v1.Namespace(
                f"{name}-namespace",
                metadata={"name": args.plan.namespace, "labels": {PART_OF_LABEL: PROJECT, **POD_SECURITY_LABELS}},
                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.plan.model_cache.retainOnDelete),
            )
            self.namespace_name = namespace.metadata.name
        else:  # the cluster's namespace: never created, adopted or deleted by the stack
            self.namespace_name = pulumi.Output.from_input(args.plan.namespace)
        self.hf_token_secret_name = None
        if args.hf_token is not None:
            secret = k8s.core.v1.Secret(
                f"{name}-hf-token",
                metadata={"name": HF_TOKEN_SECRET, "namespace": self.namespace_name},
                type="Opaque",
                string_data={HF_TOKEN_KEY: pulumi.Output.secret(args.hf_token)},
                opts=child,
            )
            self.hf_token_secret_name = secret.metadata.name
        dynamo = args.plan.dynamo
        if dynamo.imagePullSecret is not None and args.registry_key is not None:
            k8s.core.v1.Secret(
                f"{name}-pull-secret",
                metadata={"name": dynamo.imagePullSecret, "namespace": self.namespace_name},
                type="kubernetes.io/dockerconfigjson",
                string_data={".dockerconfigjson": docker_config_json(dynamo.registry, args.registry_key)},
                opts=child,
            )
        self.register_outputs({"namespace": self.namespace_name})
