"""Credentials in free-form config (Helm values, SLO overrides, engine options) are config errors naming the
key, found by the names and shapes of catalog/credentials.yaml (serving_stack/credentials.py), and never echoed:
generated credential-named keys and token shapes at any depth. References to a Secret and an image
pinned by tag and digest together are accepted."""

from __future__ import annotations

import copy
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serving_stack.config import ConfigError, parse_stack_config
from serving_stack.credentials import NAMES

BASE = {
    "kubernetes": {"cluster": {"source": "kubeconfig", "context": "test"}},
    "modelCache": {
        "storageClassName": "efs-ap",
        "size": "300Gi",
        "checkpoints": {"base": "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4", "drafts": []},
    },
    "dynamo": {"platform": {"install": True}},
    "monitoring": {"enabled": True},
}
FREE_FORM = {
    "dynamo.platform.values": lambda raw, values: raw["dynamo"]["platform"].update(values=values),
    "monitoring.prometheus.values": lambda raw, values: raw["monitoring"].update(prometheus={"values": values}),
}
ALNUM = string.ascii_letters + string.digits
TOKENS = {
    "Hugging Face token": st.text(ALNUM, min_size=34, max_size=40).map(lambda s: "hf_" + s),
    "AWS access key id": st.text(string.ascii_uppercase + string.digits, min_size=16, max_size=16).map(
        lambda s: "AKIA" + s
    ),
    "NGC API key": st.text(ALNUM, min_size=24, max_size=40).map(lambda s: "nvapi-" + s),
    "chat webhook URL": st.text(ALNUM, min_size=8, max_size=24).map(
        lambda s: f"https://hooks.slack.com/services/T0/B0/{s}"
    ),
    "URL with a password": st.text(ALNUM, min_size=6, max_size=20).map(lambda s: f"postgres://app:{s}@db:5432/x"),
}
PATH_PART = st.text(string.ascii_lowercase, min_size=1, max_size=8)


def nest(path: list[str], value):
    for part in reversed(path):
        value = {part: value}
    return value


def refused(key: str, values) -> str:
    raw = copy.deepcopy(BASE)
    FREE_FORM[key](raw, values)
    with pytest.raises(ConfigError) as raised:
        parse_stack_config(raw)
    return str(raised.value)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(list(FREE_FORM)),
    st.lists(PATH_PART, max_size=3),
    st.sampled_from(sorted(NAMES["words"])),
    st.text(ALNUM, min_size=12, max_size=20),  # long enough not to occur in the message's own words
)
def test_a_credential_named_key_is_refused_without_echo(key, path, word, secret):
    name = "admin" + word.title()
    message = refused(key, nest([*path, name], secret))
    assert message.startswith(f"{key}: "), message
    assert f"{'.'.join([*path, name])} holds a credential" in message
    assert secret not in message.split(" holds ")[1]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list(FREE_FORM)), st.lists(PATH_PART, max_size=3), st.sampled_from(list(TOKENS)), st.data())
def test_a_token_shaped_value_is_refused_without_echo(key, path, kind, data):
    token = data.draw(TOKENS[kind])
    message = refused(key, nest([*path, "note"], token))
    assert message.startswith(f"{key}: "), message
    assert " holds " in message and token not in message  # the first shape the value matches is named


def test_engine_options_are_checked_too():
    raw = copy.deepcopy(BASE)
    raw["sagemaker"] = {
        "region": "us-east-1",
        "endpoints": [
            {
                "name": "e",
                "source": "huggingface",
                "huggingface": {"repo": "nvidia/x", "options": {"OPTION_HF_TOKEN": "hf_" + "a1" * 17}},
                "instanceType": "ml.p5.4xlarge",
            }
        ],
    }
    with pytest.raises(ConfigError, match=r"^sagemaker\.endpoints\[0\]\.huggingface\.options: OPTION_HF_TOKEN holds"):
        parse_stack_config(raw)


@pytest.mark.parametrize(
    "values",
    [
        {"grafana": {"admin": {"existingSecret": "grafana-admin", "userKey": "user", "passwordKey": "password"}}},
        {"env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]},
        {"image": {"digest": "sha256:" + "ab" * 32}},
    ],
)
def test_references_to_secrets_are_accepted(values):
    for key in FREE_FORM:
        raw = copy.deepcopy(BASE)
        FREE_FORM[key](raw, values)
        parse_stack_config(raw)


def test_an_image_pinned_by_tag_and_digest_is_accepted():
    raw = copy.deepcopy(BASE)
    raw["operability"] = {"smokeTests": {"image": "docker.io/library/python:3.12.8-slim@sha256:" + "0f" * 32}}
    parse_stack_config(raw)
    raw["operability"]["smokeTests"]["image"] = "docker.io/library/python:latest"
    with pytest.raises(ConfigError, match=r"^operability\.smokeTests\.image: "):
        parse_stack_config(raw)
