"""Reading what the engine reports: an `up`'s events (apitype.EngineEvent, pulumi/pulumi
sdk/go/common/apitype/events.go, as `pulumi.automation` parses them) in the shape the upgrade scenario compares,
and a checkpoint's pending operations (apitype.OperationV2, `export_stack`), which the interrupted-`up` scenario
repairs."""

from __future__ import annotations

from pulumi.automation import EngineEvent, StepEventMetadata

from tools.e2e.engine import Run
from tools.e2e.engine_state import engine_plan, pending_creates

URN = "urn:pulumi:dev::p::{type}::{name}"


def _event(kind: str, op: str, name: str, type_: str = "kubernetes:core/v1:ConfigMap") -> EngineEvent:
    metadata = {"op": op, "urn": URN.format(type=type_, name=name), "type": type_}
    return EngineEvent.from_json({"sequence": 1, "timestamp": 1, kind: {"metadata": metadata}})


def test_an_ups_finished_steps_read_as_the_preview_plan():
    """Only finished steps count (`resOutputsEvent`); a step that started and failed is not in the plan."""
    steps = [("update", "b"), ("delete-replaced", "c"), ("replace", "c"), ("create-replacement", "c"), ("create", "e")]
    events = [_event("resourcePreEvent", op, name) for op, name in [*steps, ("create", "failed")]]
    events += [_event("resOutputsEvent", op, name) for op, name in steps]
    events.append(_event("resOutputsEvent", "update", "p-dev", "pulumi:pulumi:Stack"))  # the engine's own
    run = Run(events, ok=False, output="")
    expected = engine_plan(
        StepEventMetadata.from_json({"op": op, "urn": URN.format(type="x:y:Z", name=n), "type": "x:y:Z"})
        for op, n in steps
    )
    assert engine_plan(run.finished) == expected
    assert engine_plan(run.steps) == {**expected, "failed": "create"}
    assert expected["c"] == "replace (delete-first)" and "failed" not in expected


def _operation(kind: str, name: str, namespace: str, op: str = "creating", type_: str = "") -> dict:
    type_ = type_ or f"kubernetes:core/v1:{kind}"
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    resource = {"urn": URN.format(type=type_, name=name), "type": type_, "inputs": {"kind": kind, "metadata": metadata}}
    return {"resource": resource, "type": op}


def test_pending_creates_are_the_kubernetes_objects_being_created():
    """Only `creating` operations of Kubernetes objects; a cluster-scoped object has no namespace."""
    operations = [
        _operation("PersistentVolumeClaim", "cache", "ns"),
        _operation("PriorityClass", "ns-prewarm", "", type_="kubernetes:scheduling.k8s.io/v1:PriorityClass"),
        _operation("ConfigMap", "updating", "ns", op="updating"),
        _operation("Bucket", "b", "", type_="aws:s3/bucket:Bucket"),
    ]
    created = pending_creates({"pending_operations": operations})
    urns = [o["resource"]["urn"] for o in operations]
    assert created == [(urns[0], "PersistentVolumeClaim", "ns", "cache"), (urns[1], "PriorityClass", "", "ns-prewarm")]
    assert pending_creates({}) == [] and pending_creates({"pending_operations": None}) == []
