"""One OpenAI-compatible URL in front of every serving backend: the LiteLLM proxy (pinned image) running the config
`serving_stack.plan.gateway` generates, in the serving namespace, restricted by NetworkPolicies; with
`plan.routing.needs_redis` a small Redis for the shared cooldown state, and with `cluster_name` an IAM role the
pods assume through EKS Pod Identity, allowed to invoke exactly the fallback endpoints.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import yaml

from components.iam import allow, assume_role_policy
from serving_stack.names import TypeTokens
from serving_stack.plan.gateway import (
    MASTER_KEY_ENV,
    MASTER_KEY_SECRET_KEY,
    StackGateway,
    master_key_secret_name,
)
from serving_stack.plan.operability import CHECKOV_SKIP_ANNOTATION
from serving_stack.plan.serving import CONFIG_CHECKSUM_ANNOTATION

CONFIG_FILE = "config.yaml"
CONFIG_DIR = "/etc/litellm"
# The proxy reads the key from its env at start, so a new key must roll the pods as a new config does
# (else they keep the old key while clients read the new one from the Secret). The digest is plain, as
# helm-checksum annotations of Secrets are: a Pulumi secret anywhere in the pod template would make the
# whole Deployment spec a secret, hidden from diffs and the policy pack. Generate the key at random
# (`openssl rand -hex 32`): a digest of a guessable key is guessable.
MASTER_KEY_CHECKSUM_ANNOTATION = "nemotron.nvidia.com/master-key-sha256"
INVOKE_ACTIONS = ("sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream")
# The EKS Pod Identity agent serves credentials on the node's link-local address (port 80).
POD_IDENTITY_AGENT_CIDR = "169.254.170.23/32"
DYNAMO_FRONTEND_PORT = 8000  # the port of the Dynamo frontends the gateway routes to


@dataclass(frozen=True)
class GatewayArgs:
    plan: StackGateway  # name, LiteLLM config, pins, HPA bounds, Redis switch, allowed and backend namespaces
    namespace: pulumi.Input[str]  # where the gateway runs (the serving namespace)
    master_key: pulumi.Input[str]  # the LiteLLM master key, a Pulumi secret
    # SigV4 to the SageMaker fallbacks: a role the gateway's ServiceAccount assumes via EKS Pod Identity on this
    # cluster, allowed `sagemaker:InvokeEndpoint*` on `endpoint_arns` only, and HTTPS egress to
    # `plan.config.sagemakerEgressCidrs` (the VPC CIDR when a sagemaker.runtime VPC endpoint exists); None: no access.
    cluster_name: Optional[pulumi.Input[str]] = None
    endpoint_arns: Sequence[pulumi.Input[str]] = ()  # the SageMaker endpoints it may invoke, and no others
    tags: Mapping[str, str] = field(default_factory=dict)  # tags on the IAM role


def config_yaml(config: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(config), sort_keys=False, default_flow_style=False, width=120)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def config_checksum(config: Mapping[str, Any]) -> str:
    return _sha256(config_yaml(config))


def invoke_policy(endpoint_arns: Sequence[str]) -> str:
    invoke = allow("InvokeFallbackEndpoints", list(INVOKE_ACTIONS), sorted(endpoint_arns))
    return json.dumps({"Version": "2012-10-17", "Statement": [invoke]})


def _restricted(run_as_user: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod, container) security contexts of the restricted Pod Security Standard."""
    pod = {
        "runAsNonRoot": True,
        "runAsUser": run_as_user,
        "runAsGroup": run_as_user,
        "fsGroup": run_as_user,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    container = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    return pod, container


def _namespace_peer(namespace: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}


def gateway_egress(args: GatewayArgs, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """DNS, the Dynamo frontends, Redis, and (with SageMaker fallbacks) HTTPS plus the Pod Identity agent."""

    def rule(to: list[dict[str, Any]], *ports: int, protocol: str = "TCP") -> dict[str, Any]:
        return {"to": to, "ports": [{"protocol": protocol, "port": port} for port in ports]}

    dns = [{**_namespace_peer("kube-system"), "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}]
    rules = [{"to": dns, "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]
    if args.plan.backend_namespaces:  # an empty `to` would allow every destination
        rules.append(rule([_namespace_peer(ns) for ns in args.plan.backend_namespaces], DYNAMO_FRONTEND_PORT))
    if args.plan.routing.needs_redis:
        redis = {"podSelector": {"matchLabels": {**labels, "app.kubernetes.io/component": "redis"}}}
        rules.append(rule([redis], args.plan.pins.redis.port))
    if args.cluster_name is not None:
        rules.append(rule([{"ipBlock": {"cidr": cidr}} for cidr in args.plan.config.sagemakerEgressCidrs], 443))
        rules.append(rule([{"ipBlock": {"cidr": POD_IDENTITY_AGENT_CIDR}}], 80))
    return rules


def _deployment_spec(
    labels: Mapping[str, str], pod_context: dict[str, Any], pod: dict[str, Any], annotations: Any = None, **spec: Any
) -> dict[str, Any]:
    """Restricted pods without a service-account token (`pod`: containers, volumes, ...), `annotations` on them."""
    template = {"labels": dict(labels), **({"annotations": annotations} if annotations else {})}
    pod = {"automountServiceAccountToken": False, "securityContext": pod_context, **pod}
    return {"selector": {"matchLabels": dict(labels)}, **spec, "template": {"metadata": template, "spec": pod}}


def _network_policy(labels: Mapping[str, str], peers: list[Any], port: int, egress: list[Any]) -> dict[str, Any]:
    return {
        "podSelector": {"matchLabels": dict(labels)},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": peers, "ports": [{"protocol": "TCP", "port": port}]}],
        "egress": egress,
    }


class Gateway(pulumi.ComponentResource):
    url: pulumi.Output[str]
    service_name: pulumi.Output[str]
    master_key_secret: pulumi.Output[str]  # the Secret's name
    role_arn: Optional[pulumi.Output[str]]

    def __init__(self, name: str, args: GatewayArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.GATEWAY, name, None, opts)
        if not args.plan.allowed_namespaces:
            raise ValueError("allowed_namespaces is empty: an ingress rule without peers admits every pod")
        child = pulumi.ResourceOptions(parent=self)
        litellm, base = args.plan.pins.litellm, args.plan.config.name
        labels = {
            "app.kubernetes.io/name": "litellm",
            "app.kubernetes.io/instance": base,
            "app.kubernetes.io/part-of": "nemotron-lightning",
        }
        proxy_labels = {**labels, "app.kubernetes.io/component": "gateway"}
        metadata = {"name": base, "namespace": args.namespace, "labels": labels}

        account = k8s.core.v1.ServiceAccount(
            f"{name}-service-account", metadata=metadata, automount_service_account_token=False, opts=child
        )
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata={**metadata, "name": f"{base}-config"},
            data={CONFIG_FILE: config_yaml(args.plan.routing.config)},
            opts=child,
        )
        secret = k8s.core.v1.Secret(
            f"{name}-master-key",
            metadata={**metadata, "name": master_key_secret_name(base)},
            type="Opaque",
            string_data={MASTER_KEY_SECRET_KEY: pulumi.Output.secret(args.master_key)},
            opts=child,
        )

        self.role_arn = None
        # Pod Identity credentials reach only pods created after the association: the pods wait for it.
        credentials: list[pulumi.Resource] = []
        if args.cluster_name is not None:
            association = self._sagemaker_role(name, args, args.cluster_name, account)
            self.role_arn = association.role_arn
            credentials.append(association)

        pod_context, container_context = _restricted(litellm.runAsUser)
        writable = [(f"writable-{i}", path) for i, path in enumerate(litellm.writablePaths)]

        def probe(path: str, failures: int, period: int = 10) -> dict[str, Any]:
            get = {"path": f"/health/{path}", "port": "http"}
            return {"httpGet": get, "periodSeconds": period, "timeoutSeconds": 5, "failureThreshold": failures}

        container = {
            "name": "litellm",
            "image": litellm.image,
            "args": ["--config", f"{CONFIG_DIR}/{CONFIG_FILE}", "--port", str(litellm.port), "--num_workers", "1"],
            "ports": [{"name": "http", "containerPort": litellm.port}],
            "env": [
                {
                    "name": MASTER_KEY_ENV,
                    "valueFrom": {"secretKeyRef": {"name": secret.metadata.name, "key": MASTER_KEY_SECRET_KEY}},
                },
                {"name": "LITELLM_LOCAL_MODEL_COST_MAP", "value": "True"},  # no fetch from the internet at start
                {"name": "DISABLE_ADMIN_UI", "value": "True"},
            ],
            "resources": args.plan.pins.litellm.resources.model_dump(),
            "securityContext": container_context,
            "startupProbe": probe("liveliness", 30, period=2),
            "livenessProbe": probe("liveliness", 3),
            "readinessProbe": probe("readiness", 2),
            "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}]
            + [{"name": volume, "mountPath": path} for volume, path in writable],
        }
        spread = {"topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}
        key_digest = pulumi.Output.unsecret(pulumi.Output.from_input(args.master_key).apply(_sha256))
        deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata={
                **metadata,
                "labels": proxy_labels,
                # checkov's secrets-as-files check: LiteLLM reads its master key only from its env.
                "annotations": {
                    CHECKOV_SKIP_ANNOTATION: f"CKV_K8S_35=LiteLLM reads {MASTER_KEY_ENV} from its env only"
                },
            },
            spec=_deployment_spec(  # no `replicas`: the HPA owns it
                proxy_labels,
                pod_context,
                {
                    "serviceAccountName": account.metadata.name,  # its token unmounted: EKS Pod Identity mounts its own
                    "terminationGracePeriodSeconds": 60,
                    "topologySpreadConstraints": [
                        {"maxSkew": 1, **spread, "labelSelector": {"matchLabels": proxy_labels}}
                    ],
                    "containers": [container],
                    "volumes": [{"name": "config", "configMap": {"name": config_map.metadata.name}}]
                    + [{"name": volume, "emptyDir": {}} for volume, _ in writable],
                },
                {
                    CONFIG_CHECKSUM_ANNOTATION: config_checksum(args.plan.routing.config),
                    MASTER_KEY_CHECKSUM_ANNOTATION: key_digest,
                },
                strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=credentials),
        )
        service = k8s.core.v1.Service(
            f"{name}-service",
            metadata={**metadata, "labels": proxy_labels},
            spec={"selector": proxy_labels, "ports": [{"name": "http", "port": litellm.port, "targetPort": "http"}]},
            opts=child,
        )
        k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb",
            metadata=metadata,
            spec={"maxUnavailable": 1, "selector": {"matchLabels": proxy_labels}},
            opts=child,
        )
        cpu_target = {"type": "Utilization", "averageUtilization": args.plan.config.targetCpuUtilization}
        k8s.autoscaling.v2.HorizontalPodAutoscaler(
            f"{name}-hpa",
            metadata=metadata,
            spec={
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment.metadata.name},
                "minReplicas": args.plan.config.replicas,
                "maxReplicas": args.plan.max_replicas,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": cpu_target}}],
            },
            opts=child,
        )
        callers = [_namespace_peer(ns) for ns in args.plan.allowed_namespaces]
        k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=metadata,
            spec=_network_policy(proxy_labels, callers, litellm.port, gateway_egress(args, labels)),
            opts=child,
        )
        if args.plan.routing.needs_redis:
            self._redis(name, args, labels, proxy_labels)

        self.service_name = service.metadata.name
        self.master_key_secret = secret.metadata.name
        self.url = pulumi.Output.concat(
            "http://", service.metadata.name, ".", service.metadata.namespace, f".svc.cluster.local:{litellm.port}/v1"
        )
        self.register_outputs(
            {
                "url": self.url,
                "serviceName": self.service_name,
                "masterKeySecret": self.master_key_secret,
                "roleArn": self.role_arn,
            }
        )

    def _sagemaker_role(
        self, name: str, args: GatewayArgs, cluster_name: pulumi.Input[str], account: k8s.core.v1.ServiceAccount
    ) -> aws.eks.PodIdentityAssociation:
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-sagemaker-role",
            assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", tag_session=True),
            description="LiteLLM gateway: SigV4 InvokeEndpoint on its SageMaker fallbacks",
            tags=dict(args.tags),
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-sagemaker-invoke",
            role=role.id,
            policy=pulumi.Output.all(*args.endpoint_arns).apply(invoke_policy),
            opts=child,
        )
        return aws.eks.PodIdentityAssociation(
            f"{name}-pod-identity",
            cluster_name=cluster_name,
            namespace=args.namespace,
            service_account=account.metadata.name,
            role_arn=role.arn,
            tags=dict(args.tags),
            opts=child,
        )

    def _redis(self, name: str, args: GatewayArgs, labels: Mapping[str, str], proxy_labels: Mapping[str, str]) -> None:
        child = pulumi.ResourceOptions(parent=self)
        redis = args.plan.pins.redis
        redis_labels = {**labels, "app.kubernetes.io/component": "redis"}
        metadata = {"name": f"{args.plan.config.name}-redis", "namespace": args.namespace, "labels": redis_labels}
        server_args = ["redis-server", "--save", "", "--appendonly", "no", "--maxmemory", redis.maxMemory]
        server_args += ["--maxmemory-policy", "volatile-lru", "--dir", "/data"]
        pod_context, container_context = _restricted(redis.runAsUser)
        container = {
            "name": "redis",
            "image": redis.image,
            "args": server_args,
            "ports": [{"name": "redis", "containerPort": redis.port}],
            "resources": redis.resources.model_dump(),
            "securityContext": container_context,
            "readinessProbe": {"exec": {"command": ["redis-cli", "ping"]}, "periodSeconds": 5},
            "livenessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 10},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        }
        k8s.apps.v1.Deployment(
            f"{name}-redis-deployment",
            metadata={
                **metadata,
                # checkov's high-UID check: the official image runs as its own redis user (catalog/gateway.yaml).
                "annotations": {
                    CHECKOV_SKIP_ANNOTATION: f"CKV_K8S_40=the redis image runs as its user {redis.runAsUser}"
                },
            },
            spec=_deployment_spec(
                redis_labels,
                pod_context,
                {"containers": [container], "volumes": [{"name": "data", "emptyDir": {}}]},
                replicas=1,
                strategy={"type": "Recreate"},
            ),
            opts=child,
        )
        k8s.core.v1.Service(
            f"{name}-redis-service",
            metadata=metadata,
            spec={"selector": redis_labels, "ports": [{"name": "redis", "port": redis.port, "targetPort": "redis"}]},
            opts=child,
        )
        proxy_pods = [{"podSelector": {"matchLabels": dict(proxy_labels)}}]
        k8s.networking.v1.NetworkPolicy(
            f"{name}-redis-network-policy",
            metadata=metadata,
            spec=_network_policy(redis_labels, proxy_pods, redis.port, []),
            opts=child,
        )
