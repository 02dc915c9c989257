"""Stack configuration: one pydantic model, validated before any resource is registered."""
from serving_stack.errors import ConfigError
from serving_stack.config.stack import StackConfig, hf_token, load_stack_config, parse_stack_config

__all__ = ["ConfigError", "StackConfig", "hf_token", "load_stack_config", "parse_stack_config"]
