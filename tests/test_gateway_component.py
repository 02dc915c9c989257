"""The Gateway component under mocks, from the prod plan: the config in a ConfigMap whose checksum rolls
the pods, the master key only ever a Pulumi secret (never in plain text in any recorded input), a
non-root read-only proxy with LiteLLM's probes, Redis exactly when the plan needs it, NetworkPolicies,
and an IAM role allowed to invoke exactly the fallback endpoints through EKS Pod Identity. The recorded
resources pass the policy pack."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from aws_helpers import inputs, run_components, the
from gateway_helpers import scenario_backends

from components.gateway import (
    CONFIG_CHECKSUM_ANNOTATION,
    INVOKE_ACTIONS,
    MASTER_KEY_SECRET_KEY,
    Gateway,
    GatewayArgs,
    config_checksum,
    master_key_secret_name,
)
from policy.nemotron_policies.offline import evaluate
from serving_stack.config.gateway import GatewayConfig
from serving_stack.facts.gateway import load_gateway_pins
from serving_stack.plan.gateway import (
    MASTER_KEY_ENV,
    RedisAddress,
    StackGateway,
    gateway_output,
    plan_gateway,
    redis_host,
    service_url,
)
from tools.mock_runtime import PROJECT_DIR, redact

MASTER_KEY = "sk-gateway-test-master-key-0123456789abcdef"
NAMESPACE, NAME = "nemotron", "llm-gateway"
DEPLOYMENT, NETWORK_POLICY = "kubernetes:apps/v1:Deployment", "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def endpoint_arn(endpoint) -> str:
    return f"arn:aws:sagemaker:{endpoint.region}:123456789012:endpoint/{endpoint.id.lower()}"


def build(replicas: int = 2, sagemaker: bool = True, settings_overrides: dict | None = None):
    prod = scenario_backends()
    settings = prod.settings(replicas=replicas, **(settings_overrides or {}))
    plan = plan_gateway(prod.dynamo, prod.sagemaker, settings, RedisAddress(redis_host(NAME, NAMESPACE), 6379))
    pins = load_gateway_pins()
    config = GatewayConfig(enabled=True, name=NAME, replicas=replicas, targetCpuUtilization=70)
    stack_gateway = StackGateway(
        config=config,
        namespace=NAMESPACE,
        pins=pins,
        dynamo=tuple(prod.dynamo),
        sagemaker=tuple(prod.sagemaker),
        routing=plan,
        max_replicas=4 * replicas,
        allowed_namespaces=("apps", "monitoring"),
        backend_namespaces=(NAMESPACE,),
        output=gateway_output(
            plan, service_url(NAME, NAMESPACE, pins.litellm.port), NAMESPACE, master_key_secret_name(NAME), "key"
        ),
    )
    arns = [endpoint_arn(e) for e in stack_gateway.sagemaker]

    def program():
        gateway = Gateway(
            "gateway",
            GatewayArgs(stack_gateway, NAMESPACE, MASTER_KEY, "nemotron-prod" if sagemaker else None, arns),
        )
        return {"url": gateway.url, "secret": gateway.master_key_secret}

    return plan, run_components(program)


@pytest.fixture(scope="module")
def prod_gateway():
    return build()


def proxy(run):
    (deployment,) = [d for d in inputs(run, DEPLOYMENT) if d["metadata"]["name"] == NAME]
    return deployment


def test_master_key_never_in_plain_text(prod_gateway):
    _, run = prod_gateway
    (recorded_secret,) = run.of_type("kubernetes:core/v1:Secret")
    secret = recorded_secret.to_json()["inputs"]
    assert secret["stringData"] == {MASTER_KEY_SECRET_KEY: "[secret]"}
    recorded = json.dumps([r.to_json() for r in run.resources]) + json.dumps(run.outputs)
    assert MASTER_KEY not in recorded
    for resource in run.resources:  # raw inputs too: only inside a secret wrapper
        assert MASTER_KEY not in json.dumps(redact(resource.inputs), default=str), resource.name
    (container,) = proxy(run)["spec"]["template"]["spec"]["containers"]
    (env,) = [e for e in container["env"] if e["name"] == MASTER_KEY_ENV]
    assert env["valueFrom"]["secretKeyRef"] == {"name": secret["metadata"]["name"], "key": MASTER_KEY_SECRET_KEY}


def test_config_map_holds_the_plan_and_its_checksum_rolls_the_pods(prod_gateway):
    plan, run = prod_gateway
    config_map = the(run, "kubernetes:core/v1:ConfigMap")
    assert yaml.safe_load(config_map["data"]["config.yaml"]) == json.loads(json.dumps(plan.config))
    annotations = proxy(run)["spec"]["template"]["metadata"]["annotations"]
    assert annotations[CONFIG_CHECKSUM_ANNOTATION] == config_checksum(plan.config)
    other, _ = build(settings_overrides={"cooldownSeconds": 60})
    assert config_checksum(other.config) != annotations[CONFIG_CHECKSUM_ANNOTATION]


def test_pinned_non_root_read_only_proxy_with_litellm_probes(prod_gateway):
    _, run = prod_gateway
    pins = load_gateway_pins().litellm
    pod = proxy(run)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == pins.image and pins.image.endswith(f":v{pins.version}")
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == pins.runAsUser
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["livenessProbe"]["httpGet"]["path"] == "/health/liveliness"
    assert container["readinessProbe"]["httpGet"]["path"] == "/health/readiness"
    assert {m["mountPath"] for m in container["volumeMounts"]} >= set(pins.writablePaths)
    assert "replicas" not in proxy(run)["spec"], "the HPA owns the replica count"
    hpa = the(run, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 8)
    assert the(run, "kubernetes:policy/v1:PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def test_image_is_the_version_the_loopback_tests_run():
    pinned = re.search(r"^litellm\[proxy\]==(\S+)$", (PROJECT_DIR / "requirements-gateway.txt").read_text(), re.M)
    assert pinned and pinned.group(1) == load_gateway_pins().litellm.version


def test_redis_exactly_when_the_plan_shares_state(prod_gateway):
    plan, run = prod_gateway
    assert plan.needs_redis
    redis = [d for d in inputs(run, DEPLOYMENT) if d["metadata"]["name"] == f"{NAME}-redis"]
    (redis_container,) = [c for d in redis for c in d["spec"]["template"]["spec"]["containers"]]
    assert redis_container["image"] == load_gateway_pins().redis.image
    assert plan.config["router_settings"]["redis_host"] == redis_host(NAME, NAMESPACE)
    single_plan, single = build(replicas=1)
    assert not single_plan.needs_redis
    assert [d["metadata"]["name"] for d in inputs(single, DEPLOYMENT)] == [NAME]


def test_network_policies_allow_exactly_what_the_gateway_needs(prod_gateway):
    _, run = prod_gateway
    policies = {p["metadata"]["name"]: p["spec"] for p in inputs(run, NETWORK_POLICY)}
    gateway = policies[NAME]
    (ingress,) = gateway["ingress"]
    sources = [p["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for p in ingress["from"]]
    assert sources == ["apps", "monitoring"]
    egress_ports = sorted((port["protocol"], port["port"]) for rule in gateway["egress"] for port in rule["ports"])
    assert egress_ports == [("TCP", 53), ("TCP", 80), ("TCP", 443), ("TCP", 6379), ("TCP", 8000), ("UDP", 53)]
    redis = policies[f"{NAME}-redis"]
    assert redis["egress"] == [] and redis["ingress"][0]["from"] == [{"podSelector": gateway["podSelector"]}]
    _, without_sagemaker = build(sagemaker=False)
    (no_aws,) = [p["spec"] for p in inputs(without_sagemaker, NETWORK_POLICY) if p["metadata"]["name"] == NAME]
    assert 443 not in {port["port"] for rule in no_aws["egress"] for port in rule["ports"]}


def test_role_invokes_exactly_the_fallback_endpoints_through_pod_identity(prod_gateway):
    _, run = prod_gateway
    role = the(run, "aws:iam/role:Role")
    trust = json.loads(role["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    (statement,) = json.loads(the(run, "aws:iam/rolePolicy:RolePolicy")["policy"])["Statement"]
    assert statement["Action"] == list(INVOKE_ACTIONS)
    assert statement["Resource"] == sorted(endpoint_arn(e) for e in scenario_backends().sagemaker)
    association = the(run, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert (association["namespace"], association["serviceAccount"]) == (NAMESPACE, NAME)
    _, without_sagemaker = build(sagemaker=False)
    assert not [r for r in without_sagemaker.resources if r.type.startswith("aws:")]


def test_recorded_resources_pass_the_policy_pack(prod_gateway):
    _, run = prod_gateway
    assert evaluate(run.resources, stack="prod") == []


def test_outputs_name_the_url_and_the_secret_not_the_key(prod_gateway):
    _, run = prod_gateway
    assert run.outputs == {
        "url": f"http://{NAME}.{NAMESPACE}.svc.cluster.local:{load_gateway_pins().litellm.port}/v1",
        "secret": master_key_secret_name(NAME),
    }


def test_catalog_pins_have_sources():
    pins = load_gateway_pins()
    assert pins.litellm.sources and pins.redis.sources
    assert Path(PROJECT_DIR / "catalog" / "gateway.yaml").is_file()
