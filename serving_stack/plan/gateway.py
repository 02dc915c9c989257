"""The `gateway` block + the planned targets and SageMaker endpoints -> the LiteLLM proxy config and what the
`Gateway` component and the outputs contract need (`StackGateway`), including object names the contract names.

Backends are every target's frontend and every SageMaker endpoint (signed with SigV4 from EKS Pod Identity, so only
on a cluster the stack creates). Model groups (docs/gateway.md): one per served model of the Dynamo targets
(`model_info.id` = `dynamo:<target id>`); SageMaker endpoints of such a model form `<model>@sagemaker`, its first
fallback; endpoints of another model form a group named by it, the last fallback of every other model only when
`degraded_fallback_endpoint` names it (the answer then names the model that answered).

Cooldown: LiteLLM never cools down a group's only deployment without an explicit policy (BerriAI/litellm#40405),
and a router-wide `allowed_fails` cools down a healthy fallback group blamed for the primary's "all deployments in
cooldown" 429. So `allowed_fails_policy` names the backend faults, and fallback groups have no fallbacks of their
own. Health checks probe only Dynamo groups (a SageMaker probe is a paid invocation). More than one router process
shares cooldown and health state through Redis.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from serving_stack.config.gateway import GatewayConfig, RouterConfig
from serving_stack.config.stack import StackConfig
from serving_stack.contract.outputs import GatewayAuth, GatewayModel, GatewayOutput, ServingEndpoint
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.gateway import GatewayPins
from serving_stack.plan.sagemaker import PlannedEndpoint

SAGEMAKER_GROUP_SUFFIX = "@sagemaker"
MASTER_KEY_ENV = "LITELLM_MASTER_KEY"
DYNAMO_ID_PREFIX = "dynamo:"
SAGEMAKER_ID_PREFIX = "sagemaker:"
# Dynamo frontends take no key; the OpenAI client LiteLLM uses needs a non-empty one (else it reads
# OPENAI_API_KEY from the environment).
UNAUTHENTICATED_BACKEND_KEY = "no-auth"
# Errors that say the backend is down or stuck (a refused connection is an InternalServerError). Named in
# `allowed_fails_policy`, they cool down even a group's only deployment; the router's own "all
# deployments in cooldown" (a 429 it attributes to the next group's deployment) is not among them.
BACKEND_FAULTS = (
    "InternalServerErrorAllowedFails",
    "TimeoutErrorAllowedFails",
    "ServiceUnavailableErrorAllowedFails",
    "BadGatewayErrorAllowedFails",
)


@dataclass(frozen=True)
class RedisAddress:
    host: str
    port: int


@dataclass(frozen=True)
class GatewayPlan:
    groups: tuple[GatewayModel, ...]  # `degraded`: serves another model as the last resort of other groups
    config: dict[str, Any]
    needs_redis: bool

    def deployment_ids(self, group: str) -> list[str]:
        return [d["model_info"]["id"] for d in self.config["model_list"] if d["model_name"] == group]


def _dynamo_deployment(backend: ServingEndpoint, router: RouterConfig) -> dict[str, Any]:
    return {
        "model_name": backend.servedModelName,
        "litellm_params": {
            "model": f"openai/{backend.servedModelName}",
            "api_base": backend.url,
            "api_key": UNAUTHENTICATED_BACKEND_KEY,
            "timeout": router.timeoutSeconds,
            "stream_timeout": router.streamTimeoutSeconds,
        },
        "model_info": {"id": f"{DYNAMO_ID_PREFIX}{backend.id}"},
    }


def _sagemaker_deployment(group: str, endpoint: ServingEndpoint, router: RouterConfig) -> dict[str, Any]:
    return {
        "model_name": group,
        "litellm_params": {
            "model": f"sagemaker_chat/{endpoint.id}",
            "aws_region_name": endpoint.region,
            "timeout": router.timeoutSeconds,
            "stream_timeout": router.streamTimeoutSeconds,
        },
        "model_info": {"id": f"{SAGEMAKER_ID_PREFIX}{endpoint.id}", "disable_background_health_check": True},
    }


def _degraded_fallback(
    dynamo: Sequence[ServingEndpoint], sagemaker: Sequence[ServingEndpoint], config: GatewayConfig
) -> Optional[ServingEndpoint]:
    """The endpoint of another model that every model falls back to last; the rest of the gateway's inputs (unique
    names, a backend at all, an endpoint of this stack, replicas, timeouts) the config and `check_gateway` refuse."""
    if config.degradedFallback is None:
        return None
    wanted = config.degradedFallback.endpoint
    endpoint = next(e for e in sagemaker if e.id == wanted)
    if {b.servedModelName for b in dynamo} <= {endpoint.servedModelName}:
        why = f"{wanted!r} serves {endpoint.servedModelName!r}, the model of the Dynamo targets: it is already their"
        why += " same-model fallback"
        raise ConfigError("gateway.degradedFallback.endpoint", why, "an endpoint serving another model, or unset")
    return endpoint


def plan_gateway(
    dynamo: Sequence[ServingEndpoint],
    sagemaker: Sequence[ServingEndpoint],
    config: GatewayConfig,
    redis: Optional[RedisAddress] = None,
) -> GatewayPlan:
    """The gateway of the `gateway` block for these Dynamo targets and SageMaker endpoints. `redis` is required when
    more than one router process (one per replica) runs, and used only then."""
    degraded = _degraded_fallback(dynamo, sagemaker, config)
    router = config.router
    needs_redis = config.replicas > 1
    if needs_redis and redis is None:
        raise ValueError("more than one router process shares cooldown state through Redis: pass `redis`")
    dynamo_models = list(dict.fromkeys(b.servedModelName for b in dynamo))
    sagemaker_models = list(dict.fromkeys(e.servedModelName for e in sagemaker))

    def sagemaker_group(model: str) -> str:
        return f"{model}{SAGEMAKER_GROUP_SUFFIX}" if model in dynamo_models else model

    model_list = [_dynamo_deployment(b, router) for b in dynamo]
    model_list += [_sagemaker_deployment(sagemaker_group(e.servedModelName), e, router) for e in sagemaker]

    groups = []
    for model in dynamo_models:
        chain = [sagemaker_group(model)] if config.sameModelFallback and model in sagemaker_models else []
        if degraded and degraded.servedModelName != model:
            chain.append(sagemaker_group(degraded.servedModelName))
        groups.append(GatewayModel(name=model, servedModelName=model, kind="dynamo", fallbacks=chain, degraded=False))
    for model in sagemaker_models:
        is_degraded = degraded is not None and degraded.servedModelName == model
        name = sagemaker_group(model)
        groups.append(
            GatewayModel(name=name, servedModelName=model, kind="sagemaker", fallbacks=[], degraded=is_degraded)
        )

    router_settings: dict[str, Any] = {
        "routing_strategy": "simple-shuffle",
        "num_retries": router.numRetries,
        "retry_after": 0,
        "allowed_fails": router.allowedFails,
        "allowed_fails_policy": dict.fromkeys(BACKEND_FAULTS, router.allowedFails),
        "cooldown_time": router.cooldownSeconds,
        "timeout": router.timeoutSeconds,
        "stream_timeout": router.streamTimeoutSeconds,
        "fallbacks": [{g.name: list(g.fallbacks)} for g in groups if g.fallbacks],
    }
    if needs_redis:
        assert redis is not None
        router_settings.update({"redis_host": redis.host, "redis_port": redis.port})
    general_settings: dict[str, Any] = {
        "master_key": f"os.environ/{MASTER_KEY_ENV}",
        "background_health_checks": bool(dynamo),
        "health_check_interval": router.healthCheckIntervalSeconds,
        "background_health_check_model_groups": [g.name for g in groups if g.kind == "dynamo"],
        "health_check_skip_disabled_background_models": True,
    }
    if needs_redis:
        general_settings["use_shared_health_check"] = True
    proxy_config = {
        "model_list": model_list,
        "router_settings": router_settings,
        "litellm_settings": {"callbacks": ["prometheus"], "drop_params": True},
        "general_settings": general_settings,
    }
    return GatewayPlan(tuple(groups), proxy_config, needs_redis)


def gateway_output(plan: GatewayPlan, url: str, namespace: str, secret_name: str, secret_key: str) -> GatewayOutput:
    auth = GatewayAuth(secretNamespace=namespace, secretName=secret_name, secretKey=secret_key)
    return GatewayOutput(url=url, models=list(plan.groups), auth=auth)


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
    """`config`: the `gateway` block (name, replicas, CPU target, egress); `allowed_namespaces`: whose pods may
    call it, its own namespace first; `backend_namespaces`: where the Dynamo frontends run."""

    config: GatewayConfig
    namespace: str
    pins: GatewayPins
    dynamo: tuple[ServingEndpoint, ...]
    sagemaker: tuple[ServingEndpoint, ...]
    routing: GatewayPlan
    max_replicas: int
    allowed_namespaces: tuple[str, ...]
    backend_namespaces: tuple[str, ...]
    output: GatewayOutput


def check_gateway(config: StackConfig) -> list[ConfigError]:
    """What the config alone says is wrong with the gateway (the plan checks the rest)."""
    gateway = config.gateway
    if not gateway.enabled:
        return []
    errors = []
    names = [e.name for e in config.sagemaker.endpoints]
    degraded = gateway.degradedFallback
    if degraded and degraded.endpoint not in names:
        why = f"{bounded(degraded.endpoint)} is not a SageMaker endpoint of this stack"
        errors.append(ConfigError("gateway.degradedFallback.endpoint", why, ", ".join(names) or "none configured"))
    if not config.targets and not names:
        allowed = "at least one target or SageMaker endpoint, or gateway.enabled: false"
        errors.append(ConfigError("gateway.enabled", "the gateway has no backend", allowed))
    creates_vpc = config.aws is not None and config.aws.cluster is not None and config.aws.cluster.create is not None
    egress = [ipaddress.ip_network(cidr, strict=False) for cidr in gateway.sagemakerEgressCidrs]
    if names and creates_vpc and not any(network.is_global or network.prefixlen == 0 for network in egress):
        # The VPC this stack creates has no sagemaker.runtime interface endpoint (only the S3 gateway one), so
        # the SageMaker runtime is reached at its public address: private-only egress blocks the failover.
        why = f"{', '.join(gateway.sagemakerEgressCidrs)} reach no SageMaker runtime: the VPC this stack creates "
        why += f"has no sagemaker.runtime interface endpoint, so the gateway fails over to {names[0]} at its public "
        why += "address"
        allowed = "a range holding the public endpoint's addresses, or 0.0.0.0/0 (the default)"
        errors.append(ConfigError("gateway.sagemakerEgressCidrs", why, allowed))
    return errors


def plan_stack_gateway(
    config: GatewayConfig,
    namespace: str,
    targets: Sequence[ServingEndpoint],
    sagemaker: Sequence[PlannedEndpoint],
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
    dynamo, endpoints = tuple(targets), tuple(e.endpoint for e in sagemaker)
    redis = RedisAddress(redis_host(config.name, namespace), pins.redis.port)
    routing = plan_gateway(dynamo, endpoints, config, redis)
    url = service_url(config.name, namespace, pins.litellm.port)
    max_replicas = DEFAULT_MAX_REPLICAS_FACTOR * config.replicas if config.maxReplicas is None else config.maxReplicas
    return StackGateway(
        config=config,
        namespace=namespace,
        pins=pins,
        dynamo=dynamo,
        sagemaker=endpoints,
        routing=routing,
        max_replicas=max_replicas,
        allowed_namespaces=tuple(dict.fromkeys([namespace, *config.allowedNamespaces])),
        backend_namespaces=(namespace,) if dynamo else (),
        output=gateway_output(routing, url, namespace, master_key_secret_name(config.name), MASTER_KEY_SECRET_KEY),
    )
