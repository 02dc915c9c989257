"""Which secret keys a config cannot run without, and which setting requires each.

The plan refuses a config that lacks one (`ConfigError` naming the key, before any resource); the offline
render reads this to say which secrets a committed stack file would need (`tools/secret_placeholders.py`).
"""

from __future__ import annotations

from serving_stack.config.gateway import MASTER_KEY_SECRET
from serving_stack.config.stack import StackConfig


def required_secrets(config: StackConfig) -> dict[str, str]:
    """Secret key -> the setting that requires it."""
    required: dict[str, str] = {}
    if config.dynamo.imagePullSecret:
        required["ngcApiKey"] = "dynamo.imagePullSecret is set"
    if config.gateway.enabled:
        required[MASTER_KEY_SECRET] = "gateway.enabled is true"
    for index, endpoint in enumerate(config.sagemaker.endpoints):
        if endpoint.sends_hf_token:
            required.setdefault("hfToken", f"sagemaker.endpoints[{index}].huggingface.sendHfToken is true")
    return required
