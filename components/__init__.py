"""The ComponentResources: each builds its resources from the part of the plan it is given (`serving_stack.plan`),
beside `__main__.py`, which wires them."""

from __future__ import annotations

import copy
from typing import Optional

import pulumi


def children_wait_for(
    opts: Optional[pulumi.ResourceOptions],
) -> tuple[Optional[pulumi.ResourceOptions], list[pulumi.Resource]]:
    """A component's `opts.depends_on` as what the children that need it wait for: the component registers
    without it (it has no create step; the children that need nothing start at once)."""
    if opts is None or not opts.depends_on:
        return opts, []
    depends_on = opts.depends_on
    own = copy.copy(opts)
    own.depends_on = None
    return own, list(depends_on) if isinstance(depends_on, list) else [depends_on]  # type: ignore[list-item]
