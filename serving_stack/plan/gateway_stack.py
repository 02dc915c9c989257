"""The stack's gateway: the `gateway` block + the planned targets and SageMaker endpoints -> everything the
`Gateway` component and the outputs contract need, as plain values (`StackGateway`).

Backends are not config: every selected target's frontend, and every SageMaker endpoint of the stack (the
same model: a fallback; another model: its own group, and a degraded fallback only when named). The
gateway signs SageMaker requests with SigV4 from its pods' credentials, which the stack grants through EKS
Pod Identity on a cluster it creates. Elsewhere nothing would grant them and every failover to SageMaker
would fail, so the gateway with SageMaker endpoints on an existing cluster is a config error.

The gateway's object names (Service, Secret, Redis) are defined here once: the outputs contract names
them before the component creates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from serving_stack.config.gateway import GatewayConfig
from serving_stack.config.stack import StackConfig
from serving_stack.contract.gateway import GatewayOutput
from serving_stack.contract.outputs import ServingEndpoint
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.gateway import GatewayPins
from serving_stack.plan.gateway import (
    DynamoBackend,
    GatewayPlan,
    GatewaySettings,
    RedisAddress,
    SageMakerBackend,
    gateway_output,
    plan_gateway,
)

MASTER_KEY_SECRET_KEY = "masterKey"  # the key inside the Kubernetes Secret
DEFAULT_MAX_REPLICAS_FACTOR = 3


def service_url(name: str, namespace: str, port: int) -> str:
    return f"http://{name}.{namespace}.svc.cluster.local:{port}/v1"


def master_key_secret_name(name: str) -> str:
    """The Secret holding the master key (key `masterKey`): what the outputs contract names."""
    return f"{name}-master-key"


def redis_host(name: str, namespace: str) -> str:
    """The Redis Service's in-cluster address, written into the router settings."""
    return f"{name}-redis.{namespace}.svc.cluster.local"


@dataclass(frozen=True)
class StackGateway:
    """`allowed_namespaces`: whose pods may call it, its own namespace first; `backend_namespaces`: where the
    Dynamo frontends run."""

    name: str
    namespace: str
    pins: GatewayPins
    settings: GatewaySettings
    dynamo: tuple[DynamoBackend, ...]
    sagemaker: tuple[SageMakerBackend, ...]
    routing: GatewayPlan
    min_replicas: int
    max_replicas: int
    target_cpu_utilization: int
    allowed_namespaces: tuple[str, ...]
    backend_namespaces: tuple[str, ...]
    sagemaker_egress_cidrs: tuple[str, ...]
    output: GatewayOutput

    @property
    def invokes_sagemaker(self) -> bool:
        """An IAM role (through EKS Pod Identity) and HTTPS egress for SigV4 calls to the endpoints."""
        return bool(self.sagemaker)


def gateway_settings(config: GatewayConfig) -> GatewaySettings:
    router = config.router
    return GatewaySettings(
        replicas=config.replicas,
        num_retries=router.numRetries,
        allowed_fails=router.allowedFails,
        cooldown_seconds=router.cooldownSeconds,
        timeout_seconds=router.timeoutSeconds,
        stream_timeout_seconds=router.streamTimeoutSeconds,
        health_check_interval_seconds=router.healthCheckIntervalSeconds,
        degraded_fallback_endpoint=config.degradedFallback.endpoint if config.degradedFallback else None,
    )


def check_gateway(config: StackConfig) -> list[ConfigError]:
    """What the config alone says is wrong with the gateway (the plan checks the rest)."""
    gateway = config.gateway
    if not gateway.enabled:
        return []
    errors = []
    names = [e.name for e in config.sagemaker.endpoints]
    degraded = gateway.degradedFallback
    if degraded and degraded.endpoint not in names:
        errors.append(
            ConfigError(
                "gateway.degradedFallback.endpoint",
                f"{bounded(degraded.endpoint)} is not a SageMaker endpoint of this stack",
                ", ".join(names) or "none configured",
            )
        )
    if not config.targets and not names:
        errors.append(
            ConfigError(
                "gateway.enabled",
                "the gateway has no backend",
                "at least one target or SageMaker endpoint, or gateway.enabled: false",
            )
        )
    return errors


def _region(endpoint: ServingEndpoint) -> str:
    if endpoint.region is None:
        raise ValueError(f"SageMaker endpoint {endpoint.id} has no region")
    return endpoint.region


def plan_stack_gateway(
    config: GatewayConfig,
    namespace: str,
    targets: Sequence[ServingEndpoint],
    sagemaker: Sequence[ServingEndpoint],
    pins: GatewayPins,
    creates_cluster: bool,
) -> Optional[StackGateway]:
    """The gateway in the serving namespace in front of these targets and endpoints; None when disabled."""
    if not config.enabled:
        return None
    if sagemaker and not creates_cluster:
        raise ConfigError(
            "gateway.enabled",
            "the gateway would fail over to SageMaker endpoints it cannot sign for: "
            "the stack grants its pods AWS credentials (EKS Pod Identity) only on a cluster it creates",
            "kubernetes.cluster.source: eks with aws.cluster.create, no sagemaker.endpoints, or gateway.enabled: false",
        )
    settings = gateway_settings(config)
    dynamo = tuple(DynamoBackend(t.id, t.servedModelName, t.url) for t in targets)
    endpoints = tuple(SageMakerBackend(e.id, _region(e), e.servedModelName) for e in sagemaker)
    redis = RedisAddress(redis_host(config.name, namespace), pins.redis.port)
    routing = plan_gateway(dynamo, endpoints, settings, redis if settings.router_processes > 1 else None)
    port = pins.litellm.port
    max_replicas = DEFAULT_MAX_REPLICAS_FACTOR * config.replicas if config.maxReplicas is None else config.maxReplicas
    return StackGateway(
        name=config.name,
        namespace=namespace,
        pins=pins,
        settings=settings,
        dynamo=dynamo,
        sagemaker=endpoints,
        routing=routing,
        min_replicas=config.replicas,
        max_replicas=max_replicas,
        target_cpu_utilization=config.targetCpuUtilization,
        allowed_namespaces=tuple(dict.fromkeys([namespace, *config.allowedNamespaces])),
        backend_namespaces=(namespace,) if dynamo else (),
        sagemaker_egress_cidrs=tuple(config.sagemakerEgressCidrs),
        output=gateway_output(
            routing,
            service_url(config.name, namespace, port),
            namespace,
            master_key_secret_name(config.name),
            MASTER_KEY_SECRET_KEY,
        ),
    )
