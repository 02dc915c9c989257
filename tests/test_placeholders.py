"""Placeholder values (documentation CIDRs, AWS's example accounts, a container tag not read): the offline
render accepts and lists them, the program outside it (`pulumi up`) refuses them naming the key. The values
come from `catalog/placeholders.yaml` and `catalog/sagemaker_lmi.yaml`."""

from __future__ import annotations

import copy
import dataclasses
import ipaddress

import pytest
from bad_stack_helpers import committed
from plan_helpers import FACTS, plan_of
from sagemaker_helpers import NVFP4, huggingface_endpoint, picked_container, stack

from serving_stack.config import ConfigError
from serving_stack.plan.placeholders import config_placeholders
from tools.mock_runtime import run_program
from tools.secret_placeholders import stack_inputs
from tools.summary import summary_markdown

DOC_NETWORK = FACTS.placeholders.documentationNetworks[0].cidr
EXAMPLE_ACCOUNT = FACTS.placeholders.exampleAccounts[0].id
CIDR_KEY = "aws.cluster.create.endpointPublicAccessCidrs[0]"


def prod_raw() -> dict:
    config = committed("prod")["config"]
    return copy.deepcopy({k.split(":", 1)[1]: v for k, v in config.items() if k.startswith("nemotron-lightning:")})


def with_real_values(raw: dict) -> dict:
    create = raw["aws"]["cluster"]["create"]
    create["endpointPublicAccessCidrs"] = [
        "52.94.0.0/16"
    ]  # a public range (private ones are refused for a public endpoint)
    create["accessEntries"] = [
        {**e, "principalArn": "arn:aws:iam::210987654321:role/oncall"} for e in create["accessEntries"]
    ]
    raw["sagemaker"]["endpoints"] = []
    return raw


def test_the_committed_prod_placeholders_are_found_by_their_keys():
    found = {p.key for p in plan_of(prod_raw()).placeholders}
    raw = prod_raw()
    assert CIDR_KEY in found
    assert any(
        ipaddress.ip_network(c).subnet_of(ipaddress.ip_network(n.cidr))
        for c in raw["aws"]["cluster"]["create"]["endpointPublicAccessCidrs"]
        for n in FACTS.placeholders.documentationNetworks
        if ipaddress.ip_network(n.cidr).version == 4
    )


def test_real_values_are_no_placeholders():
    assert plan_of(with_real_values(prod_raw()), allow_placeholders=False).placeholders == ()


def test_a_documentation_cidr_is_refused_outside_the_render_naming_its_key():
    raw = with_real_values(prod_raw())
    raw["aws"]["cluster"]["create"]["endpointPublicAccessCidrs"] = [DOC_NETWORK]
    with pytest.raises(ConfigError) as caught:
        plan_of(raw, allow_placeholders=False)
    assert str(caught.value).startswith(f"{CIDR_KEY}: {DOC_NETWORK} is a placeholder")
    assert "\n" not in str(caught.value)


def test_an_example_account_is_refused_outside_the_render_naming_its_key():
    raw = with_real_values(prod_raw())
    raw["aws"]["cluster"]["create"]["accessEntries"][0]["principalArn"] = f"arn:aws:iam::{EXAMPLE_ACCOUNT}:role/x"
    with pytest.raises(ConfigError, match=r"^aws\.cluster\.create\.accessEntries\[0\]\.principalArn: arn:aws:iam::"):
        plan_of(raw, allow_placeholders=False)


def test_a_container_tag_not_read_is_refused_outside_the_render():
    """The committed picked container has its tag read (no placeholder); the same container with `tag: null`
    (built here) renders as a placeholder and is refused outside the render, naming its catalog key."""
    raw = stack(huggingface_endpoint())
    assert not [p for p in plan_of(raw).placeholders if p.key.startswith("catalog/sagemaker_lmi.yaml")]
    picked = picked_container(NVFP4)
    index = FACTS.lmi.containers.index(picked)
    unread = FACTS.lmi.model_copy(
        update={
            "containers": tuple(c.model_copy(update={"tag": None}) if c is picked else c for c in FACTS.lmi.containers)
        }
    )
    facts = dataclasses.replace(FACTS, lmi=unread)
    (placeholder,) = [p for p in plan_of(raw, facts=facts).placeholders if p.key.startswith("catalog/sagemaker_lmi")]
    assert placeholder.key == f"catalog/sagemaker_lmi.yaml containers[{index}].tag"
    with pytest.raises(ConfigError) as caught:
        plan_of(raw, facts=facts, allow_placeholders=False)
    assert str(caught.value).startswith(f"{placeholder.key}: ")


def test_the_program_outside_the_render_refuses_and_the_render_lists_what_to_set():
    inputs = stack_inputs("prod", placeholders=True)  # the out-of-band secret placeholders only
    with pytest.raises(ConfigError) as caught:
        run_program(inputs.config, inputs.secret_keys, stack="prod", allow_placeholders=False)
    assert str(caught.value).split(": ")[0] in {p.key for p in plan_of(prod_raw()).placeholders}
    assert run_program.last_monitor.recorded == []
    run = run_program(inputs.config, inputs.secret_keys, stack="prod", allow_placeholders=True)
    summary = summary_markdown("prod", run)
    assert "## Placeholders to set before `pulumi up`" in summary
    for placeholder in run.plan.placeholders:
        assert f"`{placeholder.key}`" in summary


def test_a_documentation_cidr_anywhere_in_the_config_is_found():
    found = config_placeholders({"gateway": {"egress": ["10.0.0.0/8", "198.51.100.7/32"]}}, FACTS.placeholders)
    assert [p.key for p in found] == ["gateway.egress[1]"]


def test_a_bucket_s3_reserves_for_documentation_is_refused_outside_the_render_naming_its_key():
    prefix = FACTS.placeholders.exampleBucketPrefixes[0].prefix
    endpoint = huggingface_endpoint(huggingface={"repo": NVFP4, "modelData": {"s3Uri": f"s3://{prefix}x/m/"}})
    key = "sagemaker.endpoints[0].huggingface.modelData.s3Uri"
    assert [p.key for p in plan_of(stack(endpoint)).placeholders] == [key]
    with pytest.raises(ConfigError) as caught:
        plan_of(stack(endpoint), allow_placeholders=False)
    assert str(caught.value).startswith(f"{key}: s3://{prefix}x/m/ is a placeholder")
