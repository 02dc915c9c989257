"""Which secret keys a config cannot run without, which setting requires each, and the error when one is
missing: one table, so what the render names as required (`tools/secret_placeholders.py`, preflight) and what
the plan refuses cannot drift apart."""

from __future__ import annotations

from typing import NamedTuple

from serving_stack.config.gateway import MASTER_KEY_SECRET
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError


class SecretNeed(NamedTuple):
    """`key` is needed because `why`; `missing` is the error (at `at`, else the key) when the stack lacks it."""

    key: str
    why: str
    problem: str
    remedy: str
    at: str = ""

    @property
    def missing(self) -> ConfigError:
        return ConfigError(self.at or self.key, self.problem, self.remedy)


def secret_needs(config: StackConfig) -> list[SecretNeed]:
    pull = SecretNeed(
        "ngcApiKey",
        "dynamo.imagePullSecret is set",
        "required when dynamo.imagePullSecret is set: the stack creates the pull Secret in the namespace it "
        "creates, so it cannot exist before `up`",
        "pulumi config set --secret ngcApiKey <key>, or unset dynamo.imagePullSecret",
    )
    gateway = SecretNeed(
        MASTER_KEY_SECRET,
        "gateway.enabled is true",
        "required when gateway.enabled is true: it is the gateway's only key (the LiteLLM master key), set as a "
        "Pulumi secret",
        f"pulumi config set --secret {MASTER_KEY_SECRET} sk-<random>, or gateway.enabled: false",
    )
    hf_token = [
        SecretNeed(
            "hfToken",
            f"{setting} is true",
            "needs the hfToken secret: the token goes into the model's environment for a gated repository",
            "pulumi config set --secret hfToken hf_..., or sendHfToken: false",
            setting,
        )
        for i, endpoint in enumerate(config.sagemaker.endpoints)
        if endpoint.sends_hf_token
        for setting in [f"sagemaker.endpoints[{i}].huggingface.sendHfToken"]
    ]
    return [
        *([pull] if config.dynamo.imagePullSecret else []),
        *([gateway] if config.gateway.enabled else []),
        *hf_token,
    ]


def required_secrets(config: StackConfig) -> dict[str, str]:
    """Secret key -> the (first) setting that requires it."""
    required: dict[str, str] = {}
    for need in secret_needs(config):
        required.setdefault(need.key, need.why)
    return required


def missing_secrets(config: StackConfig, secrets: frozenset[str]) -> list[ConfigError]:
    """One error per setting whose secret the stack does not set."""
    return [need.missing for need in secret_needs(config) if need.key not in secrets]
