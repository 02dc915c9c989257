"""secret-handling: credentials reach pods only through Secret references: no literal credential in env, args,
ConfigMaps or other resource inputs (Helm values, SageMaker environments, provider settings); a Secret's own
data is fine."""

from __future__ import annotations

import pytest
from catalog_picks import pick
from policy_helpers import CONFIG_MAP, DGD, JOB, check_resource, component, main_container, recipe
from pulumi.output import Unknown
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_STRING_VALUE

from policy.nemotron_policies.credentials import credential_name
from serving_stack.facts.catalog import load_catalog

pytestmark = pytest.mark.catalog_driven

HF_TOKEN = "hf_" + "Ab1" * 12
AWS_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"
SECRET = "kubernetes:core/v1:Secret"
HELM = "kubernetes:helm.sh/v3:Release"
SAGEMAKER_MODEL = "aws:sagemaker/model:Model"


def job(env=(), args=(), env_from=()) -> dict:
    container = {
        "name": "app",
        "image": "python:3.12-slim",
        "env": list(env),
        "args": list(args),
        "envFrom": list(env_from),
    }
    return {"spec": {"template": {"spec": {"containers": [container]}}}}


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "NGC_API_KEY",
        "DB_PASSWORD",
        "hfToken",
        "apiKey",
        "--hf-token",
        "--api-key",
        "secret",
        "clientSecret",
    ],
)
def test_credential_names(name):
    assert credential_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "TOKENIZERS_PARALLELISM",
        "MAX_TOKENS",
        "HF_TOKEN_PATH",
        "kmsKeyArn",
        "secretKeyRef",
        "secretName",
        "imagePullSecrets",
        "key",
        "hashKey",
        "s3Key",
        "existingSecret",
        "publicKey",
        "--max-num-batched-tokens",
        "--kv-transfer-config",
        "PYTHONHASHSEED",
    ],
)
def test_names_that_are_not_credentials(name):
    assert not credential_name(name)


def test_secret_references_pass():
    env = [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token-secret", "key": "HF_TOKEN"}}},
        {"name": "HF_HOME", "value": "/model-cache"},
        {"name": "TOKENIZERS_PARALLELISM", "value": "false"},
    ]
    body = job(env=env, args=["--hf-token", "$(HF_TOKEN)"], env_from=[{"secretRef": {"name": "hf-token-secret"}}])
    assert check_resource("secret-handling", JOB, body) == []


def test_upstream_recipes_pass():
    for target in load_catalog().recipes.values():
        config_map, dgd = recipe(target.id)
        assert check_resource("secret-handling", DGD, dgd) == [], target.id
        assert check_resource("secret-handling", CONFIG_MAP, config_map) == [], target.id


def test_literal_credential_env_is_reported():
    found = check_resource("secret-handling", JOB, job(env=[{"name": "HF_TOKEN", "value": "[secret]"}]))
    assert found == [
        "props.spec.template.spec.containers[0].env[HF_TOKEN] has a literal value; reference a Secret "
        "with valueFrom.secretKeyRef"
    ]


def test_credential_env_from_a_config_map_is_reported():
    env = [{"name": "NGC_API_KEY", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "ngc"}}}]
    (found,) = check_resource("secret-handling", JOB, job(env=env))
    assert found.endswith("env[NGC_API_KEY] is read from a ConfigMap; reference a Secret with valueFrom.secretKeyRef")


def test_token_in_a_dgd_worker_env_is_reported_without_echoing_it():
    _, dgd = recipe(pick(disaggregated=False).id)
    main_container(component(dgd, "worker"))["env"].append({"name": "HUGGING_FACE_HUB_TOKEN", "value": HF_TOKEN})
    found = check_resource("secret-handling", DGD, dgd)
    assert len(found) == 2 and all(HF_TOKEN not in m for m in found)
    assert any("holds what looks like a Hugging Face token" in m for m in found)


def test_credential_flags_in_args_are_reported():
    (found,) = check_resource("secret-handling", JOB, job(args=["serve", "--api-key=s3cr3t"]))
    assert (
        found == "props.spec.template.spec.containers[0].args: --api-key has a literal value; pass it from a "
        "Secret-backed env var as $(VAR)"
    )


def test_config_map_credentials_are_reported():
    found = check_resource("secret-handling", CONFIG_MAP, {"data": {"HF_TOKEN": "x", "notes": f"key {AWS_KEY}"}})
    assert found == [
        "props.data.HF_TOKEN is a credential-named field with a literal value; reference a Secret instead",
        "props.data.notes holds what looks like an AWS access key id",
    ]


def test_helm_values_and_sagemaker_environments_are_checked():
    (found,) = check_resource("secret-handling", HELM, {"values": {"hub": {"hfToken": "abc"}, "existingSecret": "hf"}})
    assert found.startswith("props.values.hub.hfToken is a credential-named field")
    model = {"primaryContainer": {"image": "x", "environment": {"HF_TOKEN": HF_TOKEN, "HF_MODEL_ID": "nvidia/x"}}}
    found = check_resource("secret-handling", SAGEMAKER_MODEL, model)
    assert [m.split(" ")[0] for m in found] == ["props.primaryContainer.environment.HF_TOKEN"] * 2


def test_secret_stores_hold_credentials_legitimately():
    assert check_resource("secret-handling", SECRET, {"stringData": {"HF_TOKEN": HF_TOKEN}}) == []
    assert (
        check_resource("secret-handling", "aws:ssm/parameter:Parameter", {"type": "SecureString", "value": HF_TOKEN})
        == []
    )
    assert check_resource("secret-handling", "aws:ssm/parameter:Parameter", {"type": "String", "value": HF_TOKEN}) != []


def test_provider_settings_are_no_secret_store():
    """A provider's settings are written into every state file and preview: a static key there is reported,
    however short; a profile or an assumed role passes."""
    assert check_resource("secret-handling", "pulumi:providers:aws", {"region": "us-east-1", "secretKey": "x"}) == [
        "provider setting secretKey is a static AWS credential; use a profile, an assumed role or OIDC"
    ]
    role = {"roleArn": "arn:aws:iam::123456789012:role/deploy"}
    settings = {"region": "us-east-1", "profile": "deploy", "assumeRoles": [role]}
    assert check_resource("secret-handling", "pulumi:providers:aws", settings) == []


def test_unknown_values_at_preview_are_tolerated():
    env = [{"name": "HF_TOKEN", "value": UNKNOWN_STRING_VALUE}, {"name": UNKNOWN_STRING_VALUE, "value": "x"}, Unknown()]
    assert check_resource("secret-handling", JOB, job(env=env, args=["--api-key", UNKNOWN_STRING_VALUE])) == []
    assert (
        check_resource("secret-handling", JOB, {"spec": {"template": {"spec": {"containers": UNKNOWN_ARRAY_VALUE}}}})
        == []
    )
    assert check_resource("secret-handling", CONFIG_MAP, {"data": None, "metadata": {"name": None}}) == []
