"""The preflight's data files against the world they describe: the AWS calls against botocore's service models
(and docs/preflight.md), the EC2 quota rules against every instance type EC2's model names, the cluster data
against what the stack writes."""

from __future__ import annotations

import re

import botocore.session
import pytest

from serving_stack.config.aws import SystemNodeGroupConfig
from serving_stack.facts import load_facts
from serving_stack.names import EFA_RESOURCE, GPU_RESOURCE, INFINIBAND_RESOURCE
from serving_stack.plan.cluster import ec2_instance_types
from tools.mock_runtime import PROJECT_DIR
from tools.preflight.facts import load_kubernetes, load_permissions, load_quotas

SESSION = botocore.session.get_session()
DOC = PROJECT_DIR / "docs" / "preflight.md"


@pytest.mark.parametrize("row", load_permissions().calls, ids=lambda c: c.action)
def test_each_call_is_an_operation_of_botocores_model_and_its_iam_action(row):
    model = SESSION.get_service_model(row.service)
    assert row.operation in model.operation_names
    prefix = model.metadata.get("signingName") or model.metadata["endpointPrefix"]
    assert row.action == f"{prefix}:{row.operation}"


def test_the_docs_list_exactly_the_calls_the_data_lists():
    listed = set(re.findall(r"^\| `([a-z0-9-]+:[A-Za-z]+)` \|", DOC.read_text(), flags=re.MULTILINE))
    assert listed == {c.action for c in load_permissions().calls}


def test_every_ec2_family_meets_at_most_one_quota_per_purchase_option():
    families = {name.split(".")[0] for name in ec2_instance_types()}
    for family in families:
        for purchase in ("on-demand", "spot"):
            load_quotas().ec2.quota_for(family, purchase)  # raises on two matches


def test_every_instance_type_the_stacks_launch_has_an_on_demand_quota():
    types = set(load_facts().aws.instance_types) | set(SystemNodeGroupConfig().instanceTypes)
    missing = [t for t in types if load_quotas().ec2.quota_for(t.split(".")[0], "on-demand") is None]
    assert missing == []


def test_quota_names_say_their_purchase_option():
    for quota in load_quotas().ec2.quotas:
        if quota.purchase == "on-demand":
            assert quota.name.startswith("Running On-Demand ") and quota.name.endswith(" instances")
        else:
            assert quota.name.endswith("Spot Instance Requests")


def test_each_capacity_type_the_config_allows_has_a_purchase_option():
    from typing import get_args

    from serving_stack.names import CapacityType

    assert set(load_quotas().ec2.purchaseOptions) == set(get_args(CapacityType))


def test_the_cluster_data_covers_what_the_stack_writes():
    data = load_kubernetes()
    assert not set(data.provisioners.readWriteMany) & set(data.provisioners.readWriteOnceOnly)
    fabric_resources = {f.resource for f in load_facts().aws.fabrics.values()}
    assert {GPU_RESOURCE, EFA_RESOURCE, INFINIBAND_RESOURCE} | fabric_resources <= set(data.extendedResources)
    assert load_facts().platform.chart.name in data.chartGroups
    assert set(data.groupKeys) <= {g for groups in data.chartGroups.values() for g in groups}


def _config_field(path: str) -> bool:
    """Whether a dotted key path (`dynamo.platform.install`) is a field of the stack config."""
    import typing

    import pydantic

    from serving_stack.config import StackConfig

    model: typing.Any = StackConfig
    for part in path.split("."):
        if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)) or part not in model.model_fields:
            return False
        annotation = model.model_fields[part].annotation
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        model = args[0] if args and not isinstance(annotation, type) else annotation
    return True


def test_the_keys_the_cluster_findings_name_are_config_keys():
    assert all(_config_field(guide.key) for guide in load_kubernetes().groupKeys.values())
    assert not _config_field("dynamo.platform.nonexistent")
