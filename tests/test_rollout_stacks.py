"""The committed stacks, a stack selecting every catalog target, and the config variants the tests plant defects
on: no wait that can expire, no replacement that collides or that protect refuses (the render would fail on
either), and a timeline to a served token."""

from __future__ import annotations

import pytest
from rollout_helpers import VARIANTS, records, report

from tools.rollout.report import markdown

STACKS = ["dev", "prod", "all-targets", *sorted(VARIANTS)]


@pytest.mark.parametrize("stack", STACKS)
def test_stack_has_no_blocking_rollout_finding(stack):
    blocking = report(records(stack)).blocking
    assert blocking == [], "\n".join(f.line() for f in blocking)


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_has_a_timeline_to_a_served_token(stack):
    rollout = report(records(stack))
    first = rollout.first_token()
    assert first is not None
    assert 0 < first.ready <= max(s.ready for s in rollout.timeline.serving())
    assert rollout.timeline.up_minutes() >= first.ready or not first.awaited


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_report_reads_the_same_whatever_order_the_resources_registered_in(stack):
    """The mock runtime registers resources as their inputs resolve; the summary must not follow that order."""
    stack_records = records(stack)
    assert markdown(report(stack_records)) == markdown(report(list(reversed(stack_records))))
