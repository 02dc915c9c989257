"""Every rendered DGD validates against the CRD's v1beta1 openAPIV3Schema; every built-in Kubernetes
object validates with kubernetes-validate in strict mode."""
from __future__ import annotations

import jsonschema
import kubernetes_validate
import pytest

from tools.mock_runtime import plain_numbers
from tools.render import kubernetes_objects
from stack_helpers import DGD_TYPE, all_targets_config, load_dgd_schema, reference_exists, rendered_stack, run_config

KUBERNETES_VERSION = "1.33.0"


@pytest.fixture(scope="module")
def all_targets_objects():
    return kubernetes_objects(run_config(all_targets_config()).resources)


@pytest.fixture(scope="module")
def dgd_validator():
    schema = load_dgd_schema()
    return jsonschema.validators.validator_for(schema)(schema)


def _objects_of(stack: str):
    return kubernetes_objects(rendered_stack(stack).resources)


@pytest.mark.skipif(not reference_exists(), reason="../shared/reference is not beside this checkout")
def test_every_dgd_matches_the_crd_schema(all_targets_objects, dgd_validator):
    dgds = [o for o in all_targets_objects if o["kind"] == "DynamoGraphDeployment"]
    assert len(dgds) == 30
    for dgd in dgds:
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in dgd_validator.iter_errors(plain_numbers(dgd))]
        assert not errors, f"{dgd['metadata']['name']}: {errors}"


@pytest.mark.skipif(not reference_exists(), reason="../shared/reference is not beside this checkout")
def test_schema_check_catches_a_bad_dgd(dgd_validator):
    bad = {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment", "metadata": {"name": "x"},
           "spec": {"components": [{"name": "Frontend", "type": "gateway"}]}}
    assert any("gateway" in e.message for e in dgd_validator.iter_errors(bad))


@pytest.mark.parametrize("source", ["all-targets", "dev", "prod"])
def test_builtin_objects_validate_strictly(source, all_targets_objects):
    objects = all_targets_objects if source == "all-targets" else _objects_of(source)
    builtin = [o for o in objects if "nvidia.com" not in o["apiVersion"]]
    assert {"Namespace", "Secret", "PersistentVolumeClaim", "Job", "ConfigMap"} <= {o["kind"] for o in builtin}
    for obj in builtin:
        kubernetes_validate.validate(plain_numbers(obj), KUBERNETES_VERSION, strict=True)


def test_strict_validation_rejects_an_unknown_field():
    job = next(o for o in _objects_of("dev") if o["kind"] == "Job")
    bad = {**job, "spec": {**job["spec"], "backoffLimitt": 3}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSION, strict=True)


def test_dgds_in_committed_stacks_are_v1beta1():
    for stack in ("dev", "prod"):
        kinds = {(r.inputs["apiVersion"], r.inputs["kind"]) for r in rendered_stack(stack).resources if r.type == DGD_TYPE}
        assert kinds == {("nvidia.com/v1beta1", "DynamoGraphDeployment")}
