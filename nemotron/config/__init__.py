"""Stack configuration: one pydantic model, validated before any resource is registered."""
from nemotron.errors import ConfigError
from nemotron.config.stack import StackConfig, hf_token, load_stack_config, parse_stack_config

__all__ = ["ConfigError", "StackConfig", "hf_token", "load_stack_config", "parse_stack_config"]
