"""Plan a raw stack config (as in `Pulumi.<stack>.yaml`, unprefixed) without the Pulumi runtime."""
from __future__ import annotations

from typing import Any, Optional

from serving_stack.config import parse_stack_config
from serving_stack.facts import Facts, load_facts
from serving_stack.plan.stack_plan import StackPlan, build_plan

FACTS = load_facts()


def plan_of(raw: dict[str, Any], default_region: Optional[str] = None, facts: Facts = FACTS) -> StackPlan:
    """`parse_stack_config` then `build_plan`: every check the program runs before its first resource."""
    return build_plan(parse_stack_config(raw), facts, default_region=default_region)
