"""Plan a raw stack config (as in `Pulumi.<stack>.yaml`, unprefixed) without the Pulumi runtime."""

from __future__ import annotations

import datetime
from typing import Any, Optional

from serving_stack.config import parse_stack_config
from serving_stack.config.secrets import required_secrets
from serving_stack.facts import Facts, load_facts
from serving_stack.plan.stack import StackPlan, build_plan
from tools.secret_placeholders import OUT_OF_BAND_SECRETS

FACTS = load_facts()


def plan_of(
    raw: dict[str, Any],
    default_region: Optional[str] = None,
    facts: Facts = FACTS,
    secrets: Optional[frozenset[str]] = None,
    today: Optional[datetime.date] = None,
    allow_placeholders: bool = True,
) -> StackPlan:
    """`parse_stack_config` then `build_plan`: every check the program runs before its first resource.
    `secrets`: the secret keys the stack sets (default: the out-of-band ones it requires, as `make render`)."""
    config = parse_stack_config(raw)
    if secrets is None:
        secrets = frozenset(key for key in required_secrets(config) if key in OUT_OF_BAND_SECRETS)
    return build_plan(
        config,
        facts,
        default_region=default_region,
        secrets=secrets,
        today=today,
        allow_placeholders=allow_placeholders,
    )
