"""The gateway plan from the prod stack's backends: one model group per served model, the same model on
SageMaker as the first fallback, another model only as the named degraded fallback, health checks that
spare the paid endpoints, Redis exactly when more than one router process runs; and every key is one
the pinned LiteLLM accepts (checked by LiteLLM itself in `.venv-gateway`)."""

from __future__ import annotations

import json
import subprocess

import pytest
from gateway_helpers import scenario_backends
from gateway_loopback.processes import GATEWAY_VENV, litellm_executable

from serving_stack.errors import ConfigError
from serving_stack.plan.gateway import (
    BACKEND_FAULTS,
    DYNAMO_ID_PREFIX,
    SAGEMAKER_GROUP_SUFFIX,
    SAGEMAKER_ID_PREFIX,
    RedisAddress,
    plan_gateway,
)

REDIS = RedisAddress("llm-gateway-redis.nemotron.svc.cluster.local", 6379)


@pytest.fixture(scope="module")
def prod():
    return scenario_backends()


def test_one_group_per_model_with_every_target_as_a_deployment(prod):
    plan = plan_gateway(prod.dynamo, prod.sagemaker, prod.settings(), REDIS)
    by_group: dict[str, list[str]] = {}
    for deployment in plan.config["model_list"]:
        by_group.setdefault(deployment["model_name"], []).append(deployment["model_info"]["id"])
    assert by_group[prod.model] == [f"{DYNAMO_ID_PREFIX}{b.id}" for b in prod.dynamo]
    assert by_group[f"{prod.model}{SAGEMAKER_GROUP_SUFFIX}"] == [f"{SAGEMAKER_ID_PREFIX}{prod.same_model_endpoint.id}"]
    assert by_group[prod.degraded_endpoint.servedModelName] == [f"{SAGEMAKER_ID_PREFIX}{prod.degraded_endpoint.id}"]
    urls = {d["litellm_params"]["api_base"] for d in plan.config["model_list"] if d["model_name"] == prod.model}
    assert urls == {b.url for b in prod.dynamo}
    sagemaker = [d["litellm_params"] for d in plan.config["model_list"] if "aws_region_name" in d["litellm_params"]]
    assert {(p["model"], p["aws_region_name"]) for p in sagemaker} == {
        (f"sagemaker_chat/{e.id}", e.region) for e in prod.sagemaker
    }


def test_same_model_first_and_another_model_only_as_the_named_degraded_fallback(prod):
    same_model_group = f"{prod.model}{SAGEMAKER_GROUP_SUFFIX}"
    degraded_group = prod.degraded_endpoint.servedModelName
    named = plan_gateway(prod.dynamo, prod.sagemaker, prod.settings(), REDIS)
    assert named.config["router_settings"]["fallbacks"] == [{prod.model: [same_model_group, degraded_group]}]
    assert [g.name for g in named.groups if g.degraded] == [degraded_group]
    silent = plan_gateway(prod.dynamo, prod.sagemaker, prod.settings(degraded=None), REDIS)
    assert silent.config["router_settings"]["fallbacks"] == [{prod.model: [same_model_group]}]
    assert degraded_group in [g.name for g in silent.groups], "still callable by its own name"


def test_degraded_fallback_must_name_an_endpoint_of_another_model(prod):
    same = prod.settings(degraded=prod.same_model_endpoint.id)
    with pytest.raises(ConfigError, match="already their same-model fallback"):
        plan_gateway(prod.dynamo, prod.sagemaker, same, REDIS)


def test_cooldown_policy_names_backend_faults_and_fallback_groups_have_none_of_their_own(prod):
    settings = prod.settings()
    plan = plan_gateway(prod.dynamo, prod.sagemaker, settings, REDIS)
    router = plan.config["router_settings"]
    assert router["allowed_fails_policy"] == dict.fromkeys(BACKEND_FAULTS, settings.router.allowedFails)
    assert "RateLimitErrorAllowedFails" not in router["allowed_fails_policy"]
    assert [next(iter(chain)) for chain in router["fallbacks"]] == [g.name for g in plan.groups if g.kind == "dynamo"]


def test_health_checks_probe_only_the_dynamo_groups(prod):
    plan = plan_gateway(prod.dynamo, prod.sagemaker, prod.settings(), REDIS)
    general = plan.config["general_settings"]
    assert general["background_health_checks"] is True
    assert general["background_health_check_model_groups"] == [prod.model]
    for deployment in plan.config["model_list"]:
        paid = deployment["litellm_params"]["model"].startswith("sagemaker_chat/")
        assert deployment["model_info"].get("disable_background_health_check", False) is paid
    assert general["master_key"] == "os.environ/LITELLM_MASTER_KEY"


def test_redis_exactly_when_more_than_one_router_process(prod):
    one = plan_gateway(prod.dynamo, prod.sagemaker, prod.settings(replicas=1))
    assert not one.needs_redis and "redis_host" not in one.config["router_settings"]
    for settings in (prod.settings(replicas=2), prod.settings(replicas=3)):
        with pytest.raises(ValueError, match="Redis"):
            plan_gateway(prod.dynamo, prod.sagemaker, settings)
        shared = plan_gateway(prod.dynamo, prod.sagemaker, settings, REDIS)
        assert (shared.config["router_settings"]["redis_host"], shared.config["router_settings"]["redis_port"]) == (
            REDIS.host,
            REDIS.port,
        )
        assert shared.config["general_settings"]["use_shared_health_check"] is True


CHECK_KEYS = """
import inspect, json, sys, litellm
import litellm.proxy.proxy_server as proxy_server
from litellm.proxy._types import ConfigGeneralSettings
proxy_source = inspect.getsource(proxy_server)
from litellm.types.router import AllowedFailsPolicy
config = json.load(sys.stdin)
print(json.dumps({
    "router": sorted(set(config["router_settings"]) - set(litellm.Router.get_valid_args())),
    # Documented fields, or keys the proxy reads from general_settings directly.
    "general": sorted(k for k in config["general_settings"] if k not in ConfigGeneralSettings.model_fields
                      and f'general_settings.get("{k}"' not in proxy_source),
    "policy": sorted(set(config["router_settings"]["allowed_fails_policy"]) - set(AllowedFailsPolicy.model_fields)),
    "litellm": sorted(k for k in config["litellm_settings"] if not hasattr(litellm, k)),
}))
"""


@pytest.mark.slow  # imports the pinned LiteLLM in its own virtualenv
def test_every_key_is_one_the_pinned_litellm_accepts(prod):
    litellm_executable()
    plan = plan_gateway(prod.dynamo, prod.sagemaker, prod.settings(), REDIS)
    result = subprocess.run(
        [str(GATEWAY_VENV / "bin" / "python"), "-c", CHECK_KEYS],
        input=json.dumps(plan.config),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "router": [],
        "general": [],
        "policy": [],
        "litellm": [],
    }
