"""The gateway in the stacks it runs in: the prod render's gateway passes the policy pack and the pack catches
a planted open NetworkPolicy rule or an invoke grant on every endpoint; the rollout model stays green (the
Deployment is awaited, the HPA alone sets its replicas); Redis exists exactly when more than one router
process runs; on an existing cluster without SageMaker the gateway gets no AWS role and no internet egress."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from policy_helpers import mutate, named, new_violations, recording
from rollout_helpers import committed_config, report
from stack_helpers import BASE_CONFIG, run_config

from policy.nemotron_policies.offline import evaluate

GATEWAY_COMPONENT = "nemotron:kubernetes:Gateway"
DEPLOYMENT, HPA = "kubernetes:apps/v1:Deployment", "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"


def with_gateway(config: dict, **gateway: object) -> dict:
    changed = copy.deepcopy(config)
    changed["gateway"] = {**changed.get("gateway", {}), "enabled": True, **gateway}
    return changed


@pytest.fixture(scope="module", params=[1, 2], ids=["one replica", "two replicas"])
def prod_run(request):
    return request.param, run_config(with_gateway(committed_config("prod"), replicas=request.param), stack="prod")


def gateway_records(run) -> list[dict]:
    return [r.to_json() for r in run.resources if r.parent.startswith(f"{GATEWAY_COMPONENT}::")]


def test_prod_gateway_passes_the_pack():
    violations = [v for v in evaluate(recording("prod"), stack="prod") if GATEWAY_COMPONENT in v.urn]
    assert violations == []


def test_an_open_network_policy_rule_is_caught():
    def open_ingress(resources):
        for rule in named(resources, "gateway-network-policy").inputs["spec"]["ingress"]:
            rule.pop("from")

    found = new_violations("prod", mutate("prod", open_ingress))
    assert {(v.policy_name, v.mandatory) for v in found} == {
        ("network-policy-peers", True),
        ("gateway-network-policy", True),
    }
    assert all(GATEWAY_COMPONENT in v.urn for v in found), "the filter of the passing test sees gateway resources"


def test_an_invoke_grant_on_every_endpoint_is_caught():
    def every_endpoint(resources):
        policy = named(resources, "gateway-sagemaker-invoke")
        document = json.loads(policy.inputs["policy"])
        document["Statement"][0]["Resource"] = "arn:aws:sagemaker:us-east-1:123456789012:endpoint/*"
        policy.inputs["policy"] = json.dumps(document)

    found = new_violations("prod", mutate("prod", every_endpoint))
    assert {(v.policy_name, v.mandatory) for v in found} == {("least-privilege", True)}
    assert all(
        "allows sagemaker:InvokeEndpoint on every resource" in v.message
        or "InvokeEndpointWithResponseStream on every resource" in v.message
        for v in found
    )


def test_rollout_waits_for_the_gateway_and_leaves_its_replicas_to_the_hpa(prod_run):
    replicas, run = prod_run
    records = [r.to_json() for r in run.resources]
    rollout = report(records)
    assert rollout.blocking == [], "\n".join(f.line() for f in rollout.blocking)
    deployment = next(r for r in records if r["name"] == "gateway-deployment")
    step = rollout.timeline.steps[f"{DEPLOYMENT}::gateway-deployment"]
    assert step.awaited
    assert step.wait is not None
    assert step.wait.timeout_seconds
    assert "replicas" not in deployment["inputs"]["spec"]
    (hpa,) = [r["inputs"] for r in records if r["type"] == HPA and r["parent"].startswith(GATEWAY_COMPONENT)]
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["inputs"]["metadata"]["name"]
    assert hpa["spec"]["minReplicas"] == replicas


def test_redis_exactly_with_more_than_one_router_process(prod_run):
    replicas, run = prod_run
    records = gateway_records(run)
    config = yaml.safe_load(next(r for r in records if r["name"] == "gateway-config")["inputs"]["data"]["config.yaml"])
    redis = [r for r in records if "-redis-" in r["name"]]
    if replicas == 1:
        assert redis == []
        assert "redis_host" not in config["router_settings"]
        return
    assert {r["type"].rsplit(":", 1)[-1] for r in redis} == {"Deployment", "Service", "NetworkPolicy"}
    service = next(r["inputs"]["metadata"] for r in redis if r["type"].endswith(":Service"))
    assert config["router_settings"]["redis_host"] == f"{service['name']}.{service['namespace']}.svc.cluster.local"


def test_existing_cluster_without_sagemaker_gets_no_aws_role_nor_internet_egress():
    run = run_config(with_gateway(BASE_CONFIG, replicas=1, allowedNamespaces=["agents"]))
    records = gateway_records(run)
    assert records
    assert not [r for r in records if r["type"].startswith("aws:")]
    policy = next(r for r in records if r["name"] == "gateway-network-policy")["inputs"]["spec"]
    assert not [peer for rule in policy["egress"] for peer in rule["to"] if "ipBlock" in peer]
    namespace = BASE_CONFIG["kubernetes"]["namespace"]
    ingress = [
        p["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for p in policy["ingress"][0]["from"]
    ]
    assert ingress == [namespace, "agents"]
    assert run.outputs["gateway"]["url"] == f"http://llm-gateway.{namespace}.svc.cluster.local:4000/v1"
    assert report([r.to_json() for r in run.resources]).blocking == []
