"""Config: the stack's typed input (`StackConfig`), read once from Pulumi structured config."""

from serving_stack.config.stack import (
    StackConfig,
    configured_secrets,
    load_stack_config,
    parse_stack_config,
    secret_value,
)
from serving_stack.errors import ConfigError

__all__ = [
    "ConfigError",
    "StackConfig",
    "configured_secrets",
    "load_stack_config",
    "parse_stack_config",
    "secret_value",
]
