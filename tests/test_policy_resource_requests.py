"""resource-requests (advisory): workload containers declare requests (or limits, which become requests)."""

from __future__ import annotations

import pytest
from policy_helpers import DGD, JOB, POLICY, check_resource, recipe
from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE

from serving_stack.facts.catalog import load_catalog

pytestmark = pytest.mark.catalog_driven


def job(resources: object) -> dict:
    return {
        "spec": {
            "template": {
                "spec": {
                    "initContainers": [{"name": "init"}],
                    "containers": [{"name": "app", "image": "python:3.12-slim", "resources": resources}],
                }
            }
        }
    }


def test_the_rule_is_a_recommendation():
    assert POLICY["resource-requests"].enforcement_level == EnforcementLevel.ADVISORY


def test_containers_with_requests_or_limits_pass():
    assert check_resource("resource-requests", JOB, job({"requests": {"cpu": "100m", "memory": "128Mi"}})) == []
    assert check_resource("resource-requests", JOB, job({"limits": {"memory": "1Gi"}})) == []


def test_containers_without_requests_are_reported():
    assert check_resource("resource-requests", JOB, job({})) == [
        "container app of pod template sets no resource requests (cpu, memory)"
    ]


def test_upstream_frontends_declare_no_requests():
    for target in load_catalog().recipes.values():
        frontend = target.components[0]
        requests = frontend["podTemplate"]["spec"]["containers"][0].get("resources", {})
        expected = (
            []
            if requests
            else [f"container main of component {frontend['name']} sets no resource requests (cpu, memory)"]
        )
        assert check_resource("resource-requests", DGD, recipe(target.id)[1]) == expected, target.id


def test_unknown_values_at_preview_are_tolerated():
    assert check_resource("resource-requests", JOB, job(UNKNOWN_OBJECT_VALUE)) == []
    assert check_resource("resource-requests", JOB, job({"requests": UNKNOWN_OBJECT_VALUE})) == []
