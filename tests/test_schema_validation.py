"""Every rendered object validates: built-in kinds with kubernetes-validate in strict mode, custom kinds
(DynamoGraphDeployment, monitoring.coreos.com) against the CRDs vendored under schemas/crds/, strictly."""

from __future__ import annotations

import crd_schemas
import kubernetes_validate
import pytest
from stack_helpers import DGD_TYPE, all_targets_config, rendered_stack, run_config

from serving_stack.facts.catalog import load_catalog
from tools.mock_runtime import plain_numbers
from tools.render import kubernetes_objects

pytestmark = pytest.mark.catalog_driven

KUBERNETES_VERSION = "1.33.0"


@pytest.fixture(scope="module")
def all_targets_objects():
    return kubernetes_objects(run_config(all_targets_config(dynamo={"imagePullSecret": "ngc-registry"})).resources)


def _objects_of(stack: str):
    return kubernetes_objects(rendered_stack(stack).resources)


def test_every_dgd_matches_the_crd_schema(all_targets_objects):
    dgds = [o for o in all_targets_objects if o["kind"] == "DynamoGraphDeployment"]
    assert len(dgds) == len(load_catalog().recipes)
    for dgd in dgds:
        assert crd_schemas.errors(plain_numbers(dgd)) == [], dgd["metadata"]["name"]


def test_schema_check_catches_a_bad_dgd():
    bad = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "x"},
        "spec": {"components": [{"name": "Frontend", "type": "gateway"}]},
    }
    assert any("gateway" in error for error in crd_schemas.errors(bad))


@pytest.mark.parametrize("source", ["all-targets", "dev", "prod"])
def test_every_object_validates_strictly(source, all_targets_objects):
    objects = all_targets_objects if source == "all-targets" else _objects_of(source)
    custom = [
        o
        for o in objects
        if "." in o["apiVersion"].split("/")[0] and not o["apiVersion"].split("/")[0].endswith("k8s.io")
    ]
    builtin = [o for o in objects if o not in custom]
    assert {"Namespace", "PersistentVolumeClaim", "Job", "ConfigMap"} <= {o["kind"] for o in builtin}
    for obj in builtin:
        kubernetes_validate.validate(plain_numbers(obj), KUBERNETES_VERSION, strict=True)
    for obj in custom:
        assert crd_schemas.errors(plain_numbers(obj)) == [], f"{obj['kind']} {obj['metadata']['name']}"


def test_strict_validation_rejects_an_unknown_field():
    job = next(o for o in _objects_of("dev") if o["kind"] == "Job")
    bad = {**job, "spec": {**job["spec"], "backoffLimitt": 3}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSION, strict=True)


def test_dgds_in_committed_stacks_are_v1beta1():
    for stack in ("dev", "prod"):
        kinds = {
            (r.inputs["apiVersion"], r.inputs["kind"]) for r in rendered_stack(stack).resources if r.type == DGD_TYPE
        }
        assert kinds == {("nvidia.com/v1beta1", "DynamoGraphDeployment")}
