"""Property: whatever a hand edit does to a committed stack config, the outcome is a plan or one clean
`ConfigError` (one line, bounded, key path first, at most ~200 characters of the input echoed), never another
exception; and through the whole render, exit 0, 1 (a policy or rollout refusal of a valid config) or 2,
never a traceback. Derandomized, so CI runs the same examples every time."""

from __future__ import annotations

import re

import pytest
import yaml
from bad_stack_helpers import ECHO_LIMIT, PROJECT, ThrowawayProject, committed, longest_run
from config_mutations import MARKER, mutated
from hypothesis import HealthCheck, given, settings
from plan_helpers import plan_of

from serving_stack.errors import MAX_LINE, ConfigError
from serving_stack.plan.stack import StackPlan
from tools.render import EXIT_CONFIG, EXIT_REFUSED

STACKS = ("dev", "prod")
KEY_PATH = re.compile(r"^(\S+|Pulumi\.\S+\.yaml: \S+): ")
BOUNDED = settings(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])


def raw_config(stack: str) -> dict:
    """The project's keys of a committed stack file, unprefixed (what `parse_stack_config` reads)."""
    return {
        key.removeprefix(f"{PROJECT}:"): value
        for key, value in committed(stack)["config"].items()
        if key.startswith(f"{PROJECT}:")
    }


def provider_config(stack: str) -> dict:
    return {key: value for key, value in committed(stack)["config"].items() if not key.startswith(f"{PROJECT}:")}


def assert_clean_error(message: str) -> None:
    assert "\n" not in message, message[:2000]
    assert len(message) <= MAX_LINE, len(message)
    assert KEY_PATH.match(message), message[:300]
    assert longest_run(message, MARKER) <= ECHO_LIMIT, message[:300]


@pytest.mark.parametrize("stack", STACKS)
def test_the_unmutated_configs_plan(stack):
    assert isinstance(plan_of(raw_config(stack), default_region=provider_config(stack).get("aws:region")), StackPlan)


@pytest.mark.parametrize("stack", STACKS)
def test_every_mutated_config_plans_or_fails_cleanly(stack):
    """150 examples per stack (300 in all)."""
    base, region = raw_config(stack), provider_config(stack).get("aws:region")

    @settings(BOUNDED, max_examples=150)
    @given(mutated(base))
    def check(config):
        try:
            plan = plan_of(config, default_region=region)
        except ConfigError as error:
            assert_clean_error(str(error))
        else:
            assert isinstance(plan, StackPlan)

    check()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return ThrowawayProject(tmp_path_factory.mktemp("fuzz-render"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_mutated_stack_file_renders_or_fails_cleanly(project, stack):
    """Fewer examples through `tools.render.main` (YAML file, CLI reading, program under mocks, policies)."""
    base = committed(stack)

    @settings(BOUNDED, max_examples=12)
    @given(mutated(raw_config(stack)))
    def check(config):
        document = {**base, "config": {**provider_config(stack), **{f"{PROJECT}:{k}": v for k, v in config.items()}}}
        outcome = project.render(yaml.safe_dump(document, width=1 << 30))
        assert outcome.code in (0, EXIT_REFUSED, EXIT_CONFIG), outcome
        assert not outcome.stale_left
        if outcome.code == EXIT_CONFIG:
            (line,) = outcome.stderr.splitlines()
            assert line.startswith("error: ")
            assert_clean_error(line.removeprefix("error: "))
            assert outcome.registered in (None, 0)
        else:
            assert "Traceback" not in outcome.stderr

    check()
