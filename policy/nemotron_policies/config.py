"""Policy configuration with the schema's defaults filled in, and the stack the pack is judging."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Optional, Union

import pulumi
from pulumi_policy import PolicyConfigSchema, ResourceValidationArgs, StackValidationArgs

from .values import plain

_OFFLINE_STACK: ContextVar[Optional[str]] = ContextVar("nemotron_policies_offline_stack", default=None)


def settings(args: Union[ResourceValidationArgs, StackValidationArgs], schema: PolicyConfigSchema) -> dict[str, Any]:
    """The policy's config: the schema's defaults, overridden by what the pack config sets."""
    values = {key: prop["default"] for key, prop in schema.properties.items() if "default" in prop}
    values.update(plain(dict(args.get_config() or {})))
    return values


def current_stack() -> str:
    """The stack being checked: set by the offline runner, else the engine's (named by its ConfigureStack call,
    which policy/__main__.py exports as PULUMI_STACK for the runtime settings of each analysis)."""
    return _OFFLINE_STACK.get() or pulumi.get_stack() or os.environ.get("PULUMI_STACK", "")


@contextmanager
def offline_stack(name: Optional[str]) -> Iterator[None]:
    token = _OFFLINE_STACK.set(name)
    try:
        yield
    finally:
        _OFFLINE_STACK.reset(token)
