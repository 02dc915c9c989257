"""The whole stack config: one pydantic model, read once from Pulumi structured config, with the rules that
span its blocks. What needs the catalog or the instance facts is checked while planning (`serving_stack.plan`),
still before any resource is registered."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Optional

import pulumi
import pydantic
import yaml

from serving_stack import pulumi_private
from serving_stack.config.autoscaling import AutoscalingConfig
from serving_stack.config.aws import AwsConfig
from serving_stack.config.demand import DemandConfig
from serving_stack.config.gateway import MASTER_KEY_SECRET, GatewayConfig
from serving_stack.config.monitoring import MonitoringConfig
from serving_stack.config.operability import OperabilityConfig
from serving_stack.config.sagemaker import SageMakerConfig
from serving_stack.config.serving import DynamoConfig, KubernetesConfig, ModelCacheConfig, Targets
from serving_stack.config.types import Block
from serving_stack.credentials import credential_name, literal, shapes
from serving_stack.errors import ConfigError, bounded, from_validation_error, key_path, walk

SECRETS = {  # secret config keys (`pulumi config set --secret`) and what each is
    "hfToken": "Hugging Face token: the download Jobs' HF_TOKEN, and SageMaker endpoints with sendHfToken.",
    "ngcApiKey": "NGC API key: the image pull Secret dynamo.imagePullSecret names (registry dynamo.registry).",
    MASTER_KEY_SECRET: "The gateway's LiteLLM master key (clients send it as a Bearer token); gateway.enabled needs it.",
}
SECRET_KEYS = tuple(SECRETS)
# Config namespaces besides the project's: the providers the program uses, and Pulumi's own
# (`pulumi:tags`, `pulumi:disable-default-providers`). A typo'd namespace would be ignored silently.
PROVIDER_NAMESPACES = ("aws", "kubernetes", "pulumi")


class StackConfig(Block):
    """The keys under the project namespace (`nemotron-lightning:<key>`) of `Pulumi.<stack>.yaml`."""

    kubernetes: KubernetesConfig = KubernetesConfig()
    """Where the serving objects go: the cluster to reach and the namespace the stack creates in it."""
    modelCache: ModelCacheConfig
    """The ReadWriteMany claim the checkpoints are downloaded into and every worker mounts, and its prewarm."""
    dynamo: DynamoConfig = DynamoConfig()
    """The Dynamo platform (operator Helm chart), the runtime image, and how `up` waits for DynamoGraphDeployments."""
    targets: Targets = pydantic.Field(default_factory=list)
    """Serving targets of catalog/targets.yaml to run as DynamoGraphDeployments; `make plan WRITE=1` writes them from `demand`."""
    sagemaker: SageMakerConfig = SageMakerConfig()
    """SageMaker real-time endpoints serving the model beside (or instead of) the cluster; none by default."""
    aws: Optional[AwsConfig] = None
    """The AWS side: region, the EKS cluster to create or use, GPU node pools, model-cache storage. Unset: no AWS resources."""
    monitoring: MonitoringConfig = MonitoringConfig()
    """Prometheus, DCGM exporter, dashboards and the SLO alerts."""
    demand: Optional[DemandConfig] = None
    """The load to plan for (`make plan`): requests, token shape, SLO, budget. Unset: nothing to plan."""
    operability: OperabilityConfig = OperabilityConfig()
    """Smoke tests after `up`, the scheduled benchmark and the canary."""
    autoscaling: Optional[AutoscalingConfig] = None
    """KEDA scaling of the targets' workers on queue depth, and cluster-autoscaler for the GPU pools. Unset: fixed replicas."""
    gateway: GatewayConfig = GatewayConfig()
    """The LiteLLM gateway: one OpenAI-compatible endpoint in front of the targets and SageMaker endpoints."""

    @pydantic.model_validator(mode="after")
    def _cluster_source(self) -> StackConfig:
        eks, access = self.kubernetes.cluster.source == "eks", self.kubernetes.cluster
        if not eks and access.context is None and access.kubeconfigPath is None:
            raise ValueError(
                "kubernetes.cluster: an existing cluster is named by context or kubeconfigPath (or both); with "
                "neither the stack would deploy to whatever cluster the ambient kubeconfig points at"
            )
        if eks and self.aws is None:
            raise ValueError("aws: required when kubernetes.cluster.source is eks")
        create = self.aws.cluster.create if self.aws and self.aws.cluster else None
        if eks and create is None:
            raise ValueError("aws.cluster.create: required when kubernetes.cluster.source is eks")
        if create and not eks:
            raise ValueError("kubernetes.cluster.source: must be eks when aws.cluster.create is set; allowed: eks")
        return self

    @pydantic.model_validator(mode="after")
    def _pulled_with_the_secret(self) -> StackConfig:
        """With a pull Secret, the images it is for come from the registry it authenticates to."""
        dynamo = self.dynamo
        if dynamo.imagePullSecret is None:
            return self
        images = [("dynamo.runtime.registry", dynamo.runtime.registry)]
        images += [(f"targets[{i}].image", t.image) for i, t in enumerate(self.targets) if t.image is not None]
        for key, image in images:
            if image.partition("/")[0] != dynamo.registry:
                raise ValueError(
                    f"{key}: {bounded(image)} is not on {dynamo.registry}, the registry the pull Secret "
                    f"{dynamo.imagePullSecret!r} authenticates to (dynamo.registry); allowed: an image on "
                    f"{dynamo.registry}, or dynamo.registry set to its host"
                )
        return self

    @pydantic.model_validator(mode="after")
    def _gateway_backends(self) -> StackConfig:
        names = [endpoint.name for endpoint in self.sagemaker.endpoints]
        degraded = self.gateway.degradedFallback if self.gateway.enabled else None
        if degraded and degraded.endpoint not in names:
            raise ValueError(
                f"gateway.degradedFallback.endpoint: {bounded(degraded.endpoint)} is not a SageMaker endpoint of this "
                f"stack; allowed: {', '.join(names) or 'none configured'}"
            )
        if self.gateway.enabled and not self.targets and not names:
            raise ValueError(
                "gateway.enabled: the gateway has no backend; allowed: at least one target or SageMaker endpoint, "
                "or gateway.enabled: false"
            )
        return self


def parse_stack_config(raw: dict[str, Any], stack: str = "<stack>") -> StackConfig:
    """Validate raw config values (already JSON-decoded) into a `StackConfig`, or raise one `ConfigError`."""
    if raw.get("targets") == "auto":  # planned inside `up` once; now a tool writes the plan into the stack file
        raise ConfigError(
            "targets",
            f"'auto' is no longer planned inside `pulumi up`: run `make plan STACK={stack} WRITE=1`, which writes "
            f"the demand's targets and aws.nodePools into Pulumi.{stack}.yaml",
        )
    allowed = [*StackConfig.model_fields, *SECRET_KEYS]
    unknown = [key for key in raw if key not in allowed]
    if unknown:
        raise ConfigError(key_path([unknown[0]]), "unknown config key", ", ".join(allowed))
    try:
        return StackConfig.model_validate({k: v for k, v in raw.items() if k not in SECRET_KEYS})
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, StackConfig) from None


def _decoded(value: Any) -> Any:
    """A config value JSON-decoded like `Config.get_object`, or as it is."""
    try:
        return json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        return value


def load_stack_config() -> StackConfig:
    """Read and validate the stack config of the running Pulumi program: every key in the project's namespace
    or a known provider's, each secret a non-empty Pulumi secret."""
    project, values = pulumi.get_project(), pulumi_private.config_values()
    known = (project, *PROVIDER_NAMESPACES)
    for full_key in values:
        if (namespace := full_key.partition(":")[0]) not in known:
            raise ConfigError(key_path([full_key]), f"unknown config namespace {bounded(namespace)}", ", ".join(known))
    _provider_credentials(values, project)
    for key in SECRET_KEYS:
        value = pulumi.Config().get(key)
        if value is not None and not pulumi_private.is_secret_config(f"{project}:{key}"):
            raise ConfigError(key, "must be a Pulumi secret", f"pulumi config set --secret {key} <value>")
        if value is not None and not value.strip():  # it would become an empty token, key or pull Secret
            raise ConfigError(key, "is empty", f"pulumi config set --secret {key} <value>, or remove it")
    prefix = f"{project}:"
    raw = {key[len(prefix) :]: _decoded(value) for key, value in values.items() if key.startswith(prefix)}
    return parse_stack_config(raw, pulumi.get_stack())


def _provider_credentials(values: dict[str, Any], project: str) -> None:
    """No credential in a provider's plain settings (`aws:accessKey`, `aws:secretKey`, `aws:token`, a
    `kubernetes:kubeconfig` whose user holds a token or client key): the stack file is committed; the AWS
    provider takes a profile or role, the cluster a kubeconfig file, and a secret setting stays `--secret`."""
    for full_key, value in values.items():
        if full_key.startswith(f"{project}:") or pulumi_private.is_secret_config(full_key):
            continue
        decoded = _decoded(value)
        if isinstance(decoded, str) and "\n" in decoded:  # inline YAML such as a kubeconfig's content
            with contextlib.suppress(yaml.YAMLError):
                decoded = yaml.safe_load(decoded)
        for parts, leaf in walk({full_key.partition(":")[2]: decoded}):
            name = next((part for part in reversed(parts) if isinstance(part, str)), "")
            found = shapes(leaf) if isinstance(leaf, str) else []
            if isinstance(leaf, str) and (found or (credential_name(name) and literal(leaf))):
                raise ConfigError(
                    key_path([full_key]),
                    f"holds {found[0] if found else 'a credential (' + bounded(name, 40, quote=False) + ')'} "
                    "in plain config",
                    "a profile or role (aws:profile, aws:assumeRoles), a kubeconfig file (kubernetes.cluster."
                    "kubeconfigPath), or pulumi config set --secret",
                )


def configured_secrets() -> frozenset[str]:
    """Which secret keys the stack sets (their values stay Pulumi secrets, read with `secret_value`)."""
    config = pulumi.Config()
    return frozenset(key for key in SECRET_KEYS if config.get(key) is not None)


def secret_value(key: str) -> pulumi.Output[str]:
    """A secret config value, only ever as a Pulumi secret."""
    return pulumi.Config().require_secret(key)
