"""Dated facts: the cluster's Kubernetes version against EKS's support calendar (`catalog/eks_versions.yaml`)
on an injected day, and the committed stacks against the real clock. Every day is derived from the data."""

from __future__ import annotations

import copy
import dataclasses
import datetime
from typing import Any

import pydantic
import pytest
from aws_helpers import eks_config, node_pool
from bad_stack_helpers import committed
from catalog_picks import pick
from plan_helpers import FACTS, plan_of

from serving_stack.config import ConfigError
from serving_stack.facts.aws import version_key
from serving_stack.facts.dates import TODAY_ENV, VersionDates, today
from serving_stack.plan.throughput import instance_offers
from tools.check_dates import dated_facts
from tools.check_dates import main as check_dates
from tools.render import main as render
from tools.summary import _token_costs as token_costs_markdown

CALENDAR = FACTS.eks_versions
DAY = datetime.timedelta(days=1)
KEY = "aws.cluster.create.kubernetesVersion"


def prod_raw(version: str) -> dict[str, Any]:
    raw = {k.split(":", 1)[1]: v for k, v in committed("prod")["config"].items() if k.startswith("nemotron-lightning:")}
    raw = copy.deepcopy(raw)
    raw["aws"]["cluster"]["create"]["kubernetesVersion"] = version
    return raw


def newest_supported(day: datetime.date) -> str:
    supported = [v for v, d in CALENDAR.versions.items() if d.released <= day < d.endOfStandardSupport]
    return max(supported, key=version_key)


# The newest version whose standard support ends while another is in it (so a refusal can name that one).
ENDING = max(
    (
        version
        for version, dates in CALENDAR.versions.items()
        if any(o.released <= dates.endOfStandardSupport < o.endOfStandardSupport for o in CALENDAR.versions.values())
    ),
    key=version_key,
)
END = CALENDAR.versions[ENDING].endOfStandardSupport


def test_a_version_is_accepted_the_day_before_its_standard_support_ends():
    plan = plan_of(prod_raw(ENDING), today=END - DAY)
    assert plan.cluster.create.kubernetesVersion == ENDING


def test_a_version_past_standard_support_is_refused_naming_the_key_the_date_and_the_newest_version():
    with pytest.raises(ConfigError) as caught:
        plan_of(prod_raw(ENDING), today=END)
    message = str(caught.value)
    assert message.startswith(f"{KEY}: Kubernetes {ENDING} left EKS standard support on {END.isoformat()}")
    assert message.endswith(f"allowed: {newest_supported(END)}")
    assert "\n" not in message


def dated(warnings: tuple[str, ...]) -> list[str]:
    """The warnings about the Kubernetes version (this module's); a stack's other warnings are not its own."""
    return [w for w in warnings if w.startswith((KEY, EXISTING_KEY))]


def test_a_version_warns_within_the_warning_window_and_not_before():
    warn_from = END - datetime.timedelta(days=CALENDAR.warnDays)
    assert not dated(plan_of(prod_raw(ENDING), today=warn_from - DAY).warnings)
    (warning,) = dated(plan_of(prod_raw(ENDING), today=warn_from).warnings)
    assert warning.startswith(f"{KEY}: Kubernetes {ENDING} leaves EKS standard support on {END.isoformat()}")


def test_a_version_without_calendar_dates_is_refused():
    unknown = f"1.{max(version_key(v)[1] for v in CALENDAR.versions) + 1}"
    with pytest.raises(ConfigError, match=rf"^{KEY}: no EKS support dates for Kubernetes {unknown}"):
        plan_of(prod_raw(unknown), today=END)


def test_the_render_judges_the_day_of_its_argument(tmp_path, capsys):
    version = committed("prod")["config"]["nemotron-lightning:aws"]["cluster"]["create"]["kubernetesVersion"]
    end = CALENDAR.versions[version].endOfStandardSupport
    arguments = ["--stack", "prod", "--out", str(tmp_path), "--secret-placeholders", "--today"]
    assert render([*arguments, (end - DAY).isoformat()]) == 0
    assert f"warning: {KEY}: Kubernetes {version} leaves EKS standard support" in capsys.readouterr().err
    assert render([*arguments, end.isoformat()]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {KEY}: Kubernetes {version} left EKS standard support on {end.isoformat()}")
    assert render([*arguments, "2026-02-30"]) == 2
    assert capsys.readouterr().err.startswith("error: --today: '2026-02-30' is not a date")


def test_a_bad_injected_date_names_the_variable(monkeypatch):
    monkeypatch.setenv(TODAY_ENV, "yesterday")
    with pytest.raises(ConfigError, match=rf"^{TODAY_ENV}: 'yesterday' is not a date"):
        today()


@pytest.mark.parametrize("stack", ["prod"])
def test_the_committed_stacks_run_a_version_in_standard_support_on_the_real_clock(stack, monkeypatch):
    """Judged on the clock, not the suite's fixed day: this test fails the day a committed pin ages out."""
    monkeypatch.delenv(TODAY_ENV)
    version = committed(stack)["config"]["nemotron-lightning:aws"]["cluster"]["create"]["kubernetesVersion"]
    dates = CALENDAR.versions[version]
    assert dates.released <= datetime.date.today() < dates.endOfStandardSupport


def test_check_dates_lists_what_ends_within_the_window_and_not_beyond(capsys):
    version = committed("prod")["config"]["nemotron-lightning:aws"]["cluster"]["create"]["kubernetesVersion"]
    end = CALENDAR.versions[version].endOfStandardSupport
    window = datetime.timedelta(days=CALENDAR.listDays)
    secondary = CALENDAR.versions[version].sourcing == "secondary"
    row = f"Kubernetes {version} leaves EKS standard support{' (date from secondary sources)' if secondary else ''}"
    check_dates(["--today", (end - window).isoformat()])
    assert f"{row} | Pulumi.prod.yaml" in capsys.readouterr().out
    check_dates(["--today", (end - window - DAY).isoformat()])
    assert f"{row} | Pulumi.prod.yaml" not in capsys.readouterr().out
    assert check_dates(["--today", "soon"]) == 2
    assert capsys.readouterr().err == "error: --today: 'soon' is not a date; allowed: YYYY-MM-DD\n"


def test_check_dates_exits_1_from_the_day_a_fact_ends(capsys):
    """Each dated fact (a pinned version's support, a price's reviewBy) planted as the first to end: the day
    before it, it is listed as ending; on its day the run fails naming it."""
    items = dated_facts(FACTS)
    first = min(item.day for item in items)
    assert check_dates(["--today", (first - DAY).isoformat()]) == 0
    capsys.readouterr()
    for item in items:
        assert check_dates(["--today", item.day.isoformat()]) == 1
        assert f"{item.what} (ENDED) | {item.where} |" in capsys.readouterr().out


def test_an_ended_price_is_left_out_of_the_plan_and_flagged_in_the_summary():
    for instance_type, price in FACTS.capacity_prices.capacityBlock.items():
        for day, current in ((price.reviewBy - DAY, True), (price.reviewBy, False)):
            (offer,) = [
                o for o in instance_offers(FACTS.aws, FACTS.capacity_prices, day) if o.instance_type == instance_type
            ]
            assert (offer.usd_per_hour["capacity-block"] == price.usdPerHour) is current
            ended = FACTS.capacity_prices.ended_capacity_blocks(day)
            assert any(line.startswith(f"{instance_type} capacity-block") for line in ended) is not current
    last = max(price.reviewBy for price in FACTS.capacity_prices.capacityBlock.values())
    version = committed("prod")["config"]["nemotron-lightning:aws"]["cluster"]["create"]["kubernetesVersion"]
    day = max(last, CALENDAR.versions[version].released)  # every price ended, prod's version released
    capacity = plan_of(prod_raw(version), today=day).capacity
    assert capacity.ended_prices == FACTS.capacity_prices.ended_capacity_blocks(day) != ()
    flagged = [line for line in token_costs_markdown(capacity) if line.startswith("**Price ended**")]
    assert len(flagged) == len(FACTS.capacity_prices.capacityBlock)


def test_a_calendar_row_read_only_from_copies_names_them():
    """`sourcing: secondary` (a row not read from AWS's own calendar) must say where it was read."""
    row = next(iter(CALENDAR.versions.values()))
    with pytest.raises(pydantic.ValidationError, match="a secondary row names the sources"):
        VersionDates(**{**row.model_dump(), "sourcing": "secondary", "source": None})
    assert all(d.source for d in CALENDAR.versions.values() if d.sourcing == "secondary")
    assert ("secondary sources only for" in CALENDAR.provenance()) == any(
        d.sourcing == "secondary" for d in CALENDAR.versions.values()
    )


EXISTING_KEY = "aws.cluster.existing.kubernetesVersion"


def existing_raw(version: str) -> dict[str, Any]:
    """A cluster the stack does not create, saying which version it runs."""
    existing = {
        "name": "shared-gpu",
        "kubernetesVersion": version,
        "vpcId": "vpc-0123456789abcdef0",
        "privateSubnetIds": {"us-east-1a": "subnet-0aaaaaaaaaaaaaaaa"},
        "nodeSecurityGroupIds": ["sg-0123456789abcdef0"],
    }
    on_h200 = pick(disaggregated=False, gpu="h200", routing="single").id
    return {
        **eks_config([node_pool("h200", "p5en.48xlarge")], [{"id": on_h200}], cluster={"existing": existing}),
        "kubernetes": {"cluster": {"source": "kubeconfig", "context": "shared"}},
    }


def test_an_existing_cluster_on_a_version_the_calendar_lacks_is_refused():
    unknown = f"1.{max(version_key(v)[1] for v in CALENDAR.versions) + 1}"
    with pytest.raises(ConfigError, match=rf"^{EXISTING_KEY}: no EKS support dates for Kubernetes {unknown}"):
        plan_of(existing_raw(unknown), today=END)


def test_an_existing_cluster_is_judged_between_its_release_and_the_end_of_extended_support():
    dates = CALENDAR.versions[ENDING]
    with pytest.raises(ConfigError, match=rf"^{EXISTING_KEY}: EKS releases Kubernetes {ENDING} on"):
        plan_of(existing_raw(ENDING), today=dates.released - DAY)
    assert not dated(plan_of(existing_raw(ENDING), today=dates.released).warnings)
    (warning,) = dated(plan_of(existing_raw(ENDING), today=dates.endOfExtendedSupport - DAY).warnings)
    assert warning.startswith(f"{EXISTING_KEY}: Kubernetes {ENDING} left EKS standard support")
    with pytest.raises(ConfigError, match=rf"^{EXISTING_KEY}: Kubernetes {ENDING} left EKS extended support"):
        plan_of(existing_raw(ENDING), today=dates.endOfExtendedSupport)


def test_the_platform_minimum_applies_to_a_created_and_to_an_existing_cluster():
    above = f"1.{version_key(ENDING)[1] + 1}"
    chart = FACTS.platform.chart.model_copy(update={"minKubernetes": above})
    facts = dataclasses.replace(FACTS, platform=FACTS.platform.model_copy(update={"chart": chart}))
    for raw, key in ((prod_raw(ENDING), KEY), (existing_raw(ENDING), EXISTING_KEY)):
        with pytest.raises(ConfigError, match=rf"{key}: the Dynamo platform needs Kubernetes >= {above}, got {ENDING}"):
            plan_of(raw, today=END - DAY, facts=facts)
        plan_of(raw, today=END - DAY)  # the catalog's own minimum takes it
