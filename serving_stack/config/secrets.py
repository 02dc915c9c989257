"""Which secret keys a config cannot run without, which setting requires each, and the error when one is
missing: one table, so what the render names as required and what the plan refuses cannot drift apart.

The plan refuses a config that lacks one (`ConfigError`, before any resource); the offline render reads
`required_secrets` to say which secrets a committed stack file would need (`tools/secret_placeholders.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from serving_stack.config.gateway import MASTER_KEY_SECRET
from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError


@dataclass(frozen=True)
class SecretNeed:
    """`key` is needed because `why`; `missing` is the error when the stack does not set it."""

    key: str
    why: str
    missing: ConfigError


def secret_needs(config: StackConfig) -> list[SecretNeed]:
    needs = []
    if config.dynamo.imagePullSecret:
        needs.append(
            SecretNeed(
                "ngcApiKey",
                "dynamo.imagePullSecret is set",
                ConfigError(
                    "ngcApiKey",
                    "required when dynamo.imagePullSecret is set: the stack creates the "
                    "pull Secret in the namespace it creates, so it cannot exist before `up`",
                    "pulumi config set --secret ngcApiKey <key>, or unset dynamo.imagePullSecret",
                ),
            )
        )
    if config.gateway.enabled:
        needs.append(
            SecretNeed(
                MASTER_KEY_SECRET,
                "gateway.enabled is true",
                ConfigError(
                    MASTER_KEY_SECRET,
                    "required when gateway.enabled is true: it is the gateway's only key (the LiteLLM "
                    "master key), set as a Pulumi secret",
                    f"pulumi config set --secret {MASTER_KEY_SECRET} sk-<random>, or gateway.enabled: false",
                ),
            )
        )
    for index, endpoint in enumerate(config.sagemaker.endpoints):
        if endpoint.sends_hf_token:
            setting = f"sagemaker.endpoints[{index}].huggingface.sendHfToken"
            needs.append(
                SecretNeed(
                    "hfToken",
                    f"{setting} is true",
                    ConfigError(
                        setting,
                        "needs the hfToken secret: the token goes into the model's environment for a gated repository",
                        "pulumi config set --secret hfToken hf_..., or sendHfToken: false",
                    ),
                )
            )
    return needs


def required_secrets(config: StackConfig) -> dict[str, str]:
    """Secret key -> the (first) setting that requires it."""
    required: dict[str, str] = {}
    for need in secret_needs(config):
        required.setdefault(need.key, need.why)
    return required


def missing_secrets(config: StackConfig, secrets: frozenset[str]) -> list[ConfigError]:
    """One error per setting whose secret the stack does not set."""
    return [need.missing for need in secret_needs(config) if need.key not in secrets]
