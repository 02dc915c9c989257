"""Reading what the engine wrote: an `up`'s event log (`pulumi up --event-log`, apitype.EngineEvent lines,
pulumi/pulumi sdk/go/common/apitype/events.go), in the shape the upgrade scenario compares."""

from __future__ import annotations

import json
from pathlib import Path

from tools.e2e.engine_state import applied_plan, engine_plan

URN = "urn:pulumi:dev::p::{type}::{name}"


def _event(kind: str, op: str, name: str, type_: str = "kubernetes:core/v1:ConfigMap") -> dict:
    return {"sequence": 1, "timestamp": 1, kind: {"metadata": {"op": op, "urn": URN.format(type=type_, name=name)}}}


def test_an_ups_events_read_as_the_preview_plan(tmp_path: Path):
    """Only finished steps count (`resOutputsEvent`); a step that started and failed is not in the plan."""
    steps = [("update", "b"), ("delete-replaced", "c"), ("replace", "c"), ("create-replacement", "c"), ("create", "e")]
    events = [_event("resourcePreEvent", op, name) for op, name in [*steps, ("create", "failed")]]
    events += [_event("resOutputsEvent", op, name) for op, name in steps]
    events.append(_event("resOutputsEvent", "same", "p-dev", "pulumi:pulumi:Stack"))
    log = tmp_path / "events.jsonl"
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    expected = engine_plan({"steps": [{"op": op, "urn": URN.format(type="x:y:Z", name=n)} for op, n in steps]})
    assert applied_plan(log) == expected
    assert expected["c"] == "replace (delete-first)" and "failed" not in expected
