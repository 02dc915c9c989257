"""The committed prod stack with its gateway, as `make render STACK=prod` runs it: the outputs contract
carries the URL, the model names and where the key is, each equal to the objects rendered; the ConfigMap
holds exactly the plan of the stack's own targets and endpoints (what the loopback tests run); the invoke
role names exactly the stack's endpoints and the pods wait for its Pod Identity association; and the key
is in no file the render writes."""

from __future__ import annotations

import json

import pytest
import yaml
from gateway_loopback.stack_backends import backends_of
from rollout_helpers import committed_config
from stack_helpers import TEST_SECRETS, rendered_stack, run_config, stack_file_config

from components.gateway import INVOKE_ACTIONS, MASTER_KEY_CHECKSUM_ANNOTATION
from serving_stack.config.gateway import MASTER_KEY_SECRET
from serving_stack.contract.outputs import CONTRACT_VERSION, StackOutputs
from serving_stack.plan.gateway import (
    MASTER_KEY_ENV,
    SAGEMAKER_GROUP_SUFFIX,
    RedisAddress,
    plan_gateway,
)
from tools.mock_runtime import MOCK_ACCOUNT, MOCK_REGION, ProgramRun
from tools.render import write_render
from tools.secret_placeholders import stack_inputs


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return rendered_stack("prod")


def child(run: ProgramRun, role: str) -> dict:
    """The recorded inputs of the Gateway component's child `gateway-<role>` (secrets as "[secret]")."""
    return run.named(f"gateway-{role}").to_json()["inputs"]


def test_outputs_carry_the_url_models_and_auth_of_the_rendered_objects(prod):
    outputs = StackOutputs.model_validate(prod.outputs)
    assert outputs.contractVersion == CONTRACT_VERSION
    gateway = outputs.gateway
    assert gateway is not None
    service = child(prod, "service")
    (port,) = service["spec"]["ports"]
    metadata = service["metadata"]
    assert gateway.url == f"http://{metadata['name']}.{metadata['namespace']}.svc.cluster.local:{port['port']}/v1"
    secret = child(prod, "master-key")
    assert (gateway.auth.secretNamespace, gateway.auth.secretName) == (
        secret["metadata"]["namespace"],
        secret["metadata"]["name"],
    )
    assert list(secret["stringData"]) == [gateway.auth.secretKey]
    (container,) = child(prod, "deployment")["spec"]["template"]["spec"]["containers"]
    (env,) = [e for e in container["env"] if e["name"] == MASTER_KEY_ENV]
    assert env["valueFrom"]["secretKeyRef"] == {"name": gateway.auth.secretName, "key": gateway.auth.secretKey}
    # One group per model the targets serve, its same-model SageMaker group as its fallback where the stack's
    # gateway.sameModelFallback says so.
    endpoints = outputs.endpoints
    dynamo_models = {e.servedModelName for e in endpoints if e.kind == "dynamo"}
    sagemaker_models = {e.servedModelName for e in endpoints if e.kind == "sagemaker"}
    same_model = stack_file_config("prod")["gateway"].get("sameModelFallback", True)
    expected = {
        m: [f"{m}{SAGEMAKER_GROUP_SUFFIX}"] if same_model and m in sagemaker_models else [] for m in dynamo_models
    }
    expected |= {(f"{m}{SAGEMAKER_GROUP_SUFFIX}" if m in dynamo_models else m): [] for m in sagemaker_models}
    assert {m.name: m.fallbacks for m in gateway.models} == expected


def test_config_map_is_the_plan_of_the_stacks_own_backends(prod):
    dynamo, sagemaker = backends_of(prod.outputs)
    redis = child(prod, "redis-service")
    address = RedisAddress(
        f"{redis['metadata']['name']}.{redis['metadata']['namespace']}.svc.cluster.local",
        redis["spec"]["ports"][0]["port"],
    )
    settings = stack_inputs("prod", placeholders=True).stack_config().gateway
    planned = plan_gateway(dynamo, tuple(sagemaker), settings, address)
    rendered = yaml.safe_load(child(prod, "config")["data"]["config.yaml"])
    assert rendered == json.loads(json.dumps(planned.config))


def test_invoke_role_names_exactly_the_stacks_endpoints_and_pods_wait_for_its_association(prod):
    endpoints = prod.of_type("aws:sagemaker/endpoint:Endpoint")
    assert endpoints
    (statement,) = json.loads(child(prod, "sagemaker-invoke")["policy"])["Statement"]
    assert statement["Action"] == list(INVOKE_ACTIONS)
    # The ARNs the program wired from the endpoints (the mock provider's: its region, account and resource name).
    assert sorted(statement["Resource"]) == sorted(
        f"arn:aws:sagemaker:{MOCK_REGION}:{MOCK_ACCOUNT}:endpoint/{e.name}" for e in endpoints
    )
    trust = json.loads(child(prod, "sagemaker-role")["assumeRolePolicy"])
    assert {s["Principal"]["Service"] for s in trust["Statement"]} == {"pods.eks.amazonaws.com"}
    association = child(prod, "pod-identity")
    account = child(prod, "service-account")["metadata"]
    assert (association["namespace"], association["serviceAccount"]) == (account["namespace"], account["name"])
    assert association["clusterName"] == committed_config("prod")["aws"]["cluster"]["create"]["name"]
    deployment = prod.named("gateway-deployment").to_json()
    assert "aws:eks/podIdentityAssociation:PodIdentityAssociation::gateway-pod-identity" in deployment["dependsOn"]


def test_the_master_key_is_in_no_file_the_render_writes(tmp_path):
    key = TEST_SECRETS[MASTER_KEY_SECRET]
    run = run_config(committed_config("prod"), stack="prod")
    write_render(run, "prod", tmp_path)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"resources.json", "outputs.json", "summary.md"}
    assert any(p.parent.name == "manifests" for p in files)
    for path in files:
        assert key not in path.read_text(), path
    secret = json.loads((tmp_path / "resources.json").read_text())
    (master_key,) = [r for r in secret if r["name"] == "gateway-master-key"]
    assert master_key["inputs"]["stringData"] == {"masterKey": "[secret]"}
    # What rolls the pods on a new key is a digest, not the key; it changes with the key.
    annotations = run.named("gateway-deployment").to_json()["inputs"]["spec"]["template"]["metadata"]["annotations"]
    other = run_config(committed_config("prod"), stack="prod", secrets={**TEST_SECRETS, MASTER_KEY_SECRET: key + "-2"})
    other_annotations = other.named("gateway-deployment").to_json()["inputs"]["spec"]["template"]["metadata"]
    assert (
        annotations[MASTER_KEY_CHECKSUM_ANNOTATION] != other_annotations["annotations"][MASTER_KEY_CHECKSUM_ANNOTATION]
    )
