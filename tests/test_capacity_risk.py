"""First-`up` capacity risk per GPU pool in summary.md, and prod's reserved variant (an ODCR per pool, as
its stack file documents) rendering with the reservation targeted and the risk lowered."""

from __future__ import annotations

import copy

from bad_stack_helpers import committed
from stack_helpers import TEST_SECRETS, run_config

from tools.summary import HOW_TO_RESERVE, RISK, summary_markdown

RESERVATION = "cr-0123456789abcdef0"


def prod_raw() -> dict:
    config = committed("prod")["config"]
    return copy.deepcopy({k.split(":", 1)[1]: v for k, v in config.items() if k.startswith("nemotron-lightning:")})


def test_prod_names_each_on_demand_pool_as_the_likeliest_first_failure_and_how_to_reserve():
    run = run_config(prod_raw(), stack="prod", secrets=TEST_SECRETS)
    summary = summary_markdown("prod", run)
    risk, _ = RISK["on-demand"]
    for pool in prod_raw()["aws"]["nodePools"]:
        assert f"| `{pool['name']}` | {pool['instanceType']} | {pool['availabilityZone']} | on-demand |" in summary
    assert f"| {risk} |" in summary
    assert HOW_TO_RESERVE in summary


def test_the_odcr_variant_targets_the_reservation_and_lowers_the_risk():
    raw = prod_raw()
    for pool in raw["aws"]["nodePools"]:
        pool.update(capacityType="odcr", capacityReservationId=RESERVATION)
    run = run_config(raw, stack="prod", secrets=TEST_SECRETS)
    templates = run.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    gpu_templates = [t for t in templates if t.inputs.get("capacityReservationSpecification")]
    assert len(gpu_templates) == len(raw["aws"]["nodePools"])
    for template in gpu_templates:
        target = template.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
        assert target == {"capacityReservationId": RESERVATION}
    summary = summary_markdown("prod", run)
    assert f"| odcr `{RESERVATION}` | 1 | {RISK['odcr'][0]} |" in summary
    assert HOW_TO_RESERVE not in summary
