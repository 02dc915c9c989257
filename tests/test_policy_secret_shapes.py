"""Credentials by value shape: every shape the pack knows is found wherever it sits, and nothing the stack or
the upstream recipes really write looks like one (every string of the dev, prod and recipe objects)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from policy_helpers import CONFIG_MAP, JOB, check_resource, recording

from policy.nemotron_policies.credentials import SHAPES, credential_name, random_token, registry_auth, shapes
from serving_stack.facts.catalog import load_catalog

SAMPLES = {
    "a Hugging Face token": "hf_" + "Zq7" * 12,
    "an AWS access key id": "AKIAQ3EXAMPLE7KEY2QX",
    "an AWS secret access key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "an NGC API key": "nvapi-" + "Ab3_" * 10,
    "a GitHub token": "ghp_" + "a1B2" * 9,
    "a Slack token": "xoxb-1234567890-abcdefghij",
    "an OpenAI API key": "sk-proj-" + "x9Y8" * 9,
    "a Google API key": "AIza" + "Sy0123456789abcdefghijklmnopqrstuvw",
    "a private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA==\n-----END OPENSSH PRIVATE KEY-----",
    "a JSON Web Token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dGhpcy1pcy1ub3QtYS1zaWduYXR1cmU",
    "a URL with a password": "https://user:s3cr3t@registry.example.com/v2/",
    "a URL with a credential in its query": "https://metrics.example.com/api/v1/query?api_key=k7Vx2LmQ9",
    "an Authorization header with a literal credential": "Authorization: Bearer s3cr3t-value-1234",
    "a chat webhook URL": "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
}


def test_every_shape_has_a_sample():
    assert set(SAMPLES) == {kind for kind, _ in SHAPES}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_each_shape_is_found_inside_text(kind):
    assert kind in list(shapes(f"prefix {SAMPLES[kind]} suffix"))


def test_registry_auth_needs_an_auths_entry_with_credentials():
    assert registry_auth(json.dumps({"auths": {"nvcr.io": {"auth": "b2F1dGg6eA=="}}}))
    assert registry_auth(json.dumps({"auths": {"nvcr.io": {"identitytoken": "t"}}}))
    assert not registry_auth(json.dumps({"auths": {}}))
    assert not registry_auth("auths are great")


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        ("HF_TOKEN", True),
        ("DB_PASS", True),
        ("SMTP_PWD", True),
        ("REGISTRY_AUTH", True),
        ("apiKey", True),
        ("NGC_KEY", True),
        ("sshPassphrase", True),
        ("HF_TOKEN_PATH", False),
        ("AUTH_METHOD", False),
        ("FI_PROVIDER", False),
        ("tokenizerMode", False),
        ("hashKey", False),
        ("EXISTING_SECRET_NAME", False),
    ],
)
def test_credential_names(name, credential):
    assert credential_name(name) is credential


@pytest.mark.parametrize(
    ("value", "generated"),
    [
        ("Zq7x9LmP2vT8sK4nR6wY1bC3dF5gH0jQeUaIoSiX", True),
        ("4f9K2mQ8xZ7pL1vR6tW3yB5nC0hJ8sD2", True),
        ("FlashInferFP8ScaledMMLinearKernel", False),
        ("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4", False),
        ("0123456789abcdef0123456789abcdef", False),
    ],
)
def test_random_tokens(value, generated):
    assert random_token(value) is generated


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield str(key)
            yield from _strings(child)
    elif isinstance(value, list):
        for child in value:
            yield from _strings(child)


def real_strings() -> list[str]:
    found = [s for stack in ("dev", "prod") for r in recording(stack) for s in _strings(r.inputs)]
    for recipe in load_catalog().recipes.values():
        found += [s for manifest in recipe.copy_manifests() for s in _strings(manifest)]
    return found


def test_nothing_the_stack_or_the_recipes_write_looks_like_a_credential():
    strings = real_strings()
    assert len(strings) > 1000
    assert [(s[:60], list(shapes(s))) for s in strings if list(shapes(s))] == []


def test_a_credential_in_config_map_binary_data_or_a_job_env_is_found():
    key = base64.b64encode(SAMPLES["a private key"].encode()).decode()
    (found,) = check_resource("secret-handling", CONFIG_MAP, {"metadata": {"name": "c"}, "binaryData": {"id": key}})
    assert found == "props.binaryData.id (decoded) holds what looks like a private key"
    job = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "image": "nvcr.io/a:1.0",
                            "env": [{"name": "PLAIN", "value": SAMPLES["an NGC API key"]}],
                        }
                    ]
                }
            }
        }
    }
    (found,) = check_resource("secret-handling", JOB, job)
    assert "holds what looks like an NGC API key" in found
    assert SAMPLES["an NGC API key"] not in found


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_shape_is_found_alike_in_a_short_value_and_a_long_one_the_cache_does_not_keep(kind):
    from policy.nemotron_policies import credentials

    long_value = "x " * credentials.CACHED_VALUE_CHARS + SAMPLES[kind]
    kept = credentials._shapes.cache_info().currsize
    assert kind in set(shapes(long_value)) and kind in set(shapes(SAMPLES[kind]))
    assert credentials._shapes.cache_info().currsize <= kept + 1  # the short sample only
    assert credential_name("--" + "a" * credentials.CACHED_VALUE_CHARS + "-api-key")
