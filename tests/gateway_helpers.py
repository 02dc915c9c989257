"""Gateway inputs derived from the rendered prod stack (its outputs contract)."""

from __future__ import annotations

from stack_helpers import rendered_stack

from tools.gateway_loopback.stack_backends import (
    StackBackends,
    stack_backends,
)
from tools.secret_placeholders import stack_inputs

ProdBackends = StackBackends


def prod_backends() -> StackBackends:
    """The rendered prod stack's backends and its own `gateway` settings."""
    return stack_backends(
        rendered_stack("prod").outputs, stack_inputs("prod", placeholders=True).stack_config().gateway
    )
