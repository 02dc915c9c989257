"""The model cache's claim and its volume: a claim bound to the stack's FSx file system through a static
PersistentVolume binds as soon as both exist; one provisioned by an Immediate FSx class (issue 10's defect,
planted by hand) outlasts the provider's hard-coded 5-minute wait; a static volume that cannot satisfy its claim
or that nothing creates leaves the claim Pending; and destroy keeps the data in the protected file system."""

from __future__ import annotations

import pytest
from rollout_helpers import (
    RULES,
    annotate,
    findings_about,
    graph,
    of_kind,
    of_type,
    plant_dynamic_fsx_class,
    records,
    report,
)

from tools.rollout.destroy import DELETED, REFUSED
from tools.rollout.report import markdown
from tools.rollout.volumes import STATIC, binding

WAIT = "wait"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
HARD_CODED_MINUTES = RULES.kinds["PersistentVolumeClaim"].timeout_seconds / 60


def _claim_and_volume(stack_records):
    (claim,) = of_kind(stack_records, "PersistentVolumeClaim")
    (volume,) = of_kind(stack_records, "PersistentVolume")
    return claim, volume


def test_the_claim_binds_to_the_stacks_volume_once_the_file_system_exists():
    prod = records("prod")
    claim, volume = _claim_and_volume(prod)
    (file_system,) = of_type(prod, FSX)
    rollout = report(prod)
    steps = rollout.timeline.steps
    step = steps[f"{claim['type']}::{claim['name']}"]
    assert step.work.typical == RULES.span(STATIC).typical
    assert (
        step.ready >= steps[f"{volume['type']}::{volume['name']}"].ready >= steps[f"{FSX}::{file_system['name']}"].ready
    )
    assert any(need.key.endswith(f"::{volume['name']}") for need in step.prerequisites)
    assert findings_about(prod, claim["name"]) == []


def test_immediate_fsx_claim_without_skip_await_is_reported_and_either_remedy_clears_it():
    prod = records("prod")
    storage_class, claim = plant_dynamic_fsx_class(prod)
    (line,) = findings_about(prod, claim["name"], WAIT, blocking=True)
    assert f"at most {HARD_CODED_MINUTES:g} min" in line
    assert "Immediate-binding" in line
    annotate(claim, skip_await="true")
    assert findings_about(prod, claim["name"], WAIT) == []
    claim["inputs"]["metadata"]["annotations"] = {}
    storage_class["inputs"]["volumeBindingMode"] = "WaitForFirstConsumer"
    assert findings_about(prod, claim["name"], WAIT) == []


def test_custom_timeouts_do_not_extend_the_hard_coded_claim_wait():
    prod = records("prod")
    _, claim = plant_dynamic_fsx_class(prod)
    claim["customTimeouts"] = {"create": "60m"}
    assert findings_about(prod, claim["name"], WAIT, blocking=True)


def _other_claim(claim, volume):
    volume["inputs"]["spec"]["claimRef"]["name"] = "another-claim"


def _smaller(claim, volume):
    volume["inputs"]["spec"]["capacity"]["storage"] = "1Gi"


def _other_class(claim, volume):
    volume["inputs"]["spec"]["storageClassName"] = "another-class"


def _read_write_once(claim, volume):
    volume["inputs"]["spec"]["accessModes"] = ["ReadWriteOnce"]


def _block_mode(claim, volume):
    volume["inputs"]["spec"]["volumeMode"] = "Block"


@pytest.mark.parametrize(
    ("plant", "said"),
    [
        (_other_claim, "reserves it for claim"),
        (_smaller, "is less than the claim's request"),
        (_other_class, "storageClassName 'another-class'"),
        (_read_write_once, "ReadWriteMany"),
        (_block_mode, "volumeMode Block"),
    ],
)
def test_a_static_volume_that_cannot_bind_its_claim_is_reported(plant, said):
    prod = records("prod")
    claim, volume = _claim_and_volume(prod)
    plant(claim, volume)
    (line,) = findings_about(prod, claim["name"], WAIT, blocking=True)
    assert said in line
    assert volume["name"] in line
    assert "stays Pending" in line


def test_a_claim_naming_a_volume_nothing_creates_on_a_cluster_the_stack_creates_is_reported():
    prod = records("prod")
    claim, volume = _claim_and_volume(prod)
    prod.remove(volume)
    (line,) = findings_about(prod, claim["name"], WAIT, blocking=True)
    assert f"PersistentVolume {claim['inputs']['spec']['volumeName']}" in line
    assert "its cluster is created" in line


def test_destroy_deletes_the_claim_and_keeps_the_data_in_the_protected_file_system():
    prod = records("prod")
    claim, volume = _claim_and_volume(prod)
    (file_system,) = of_type(prod, FSX)
    rows = {row.resource.name: row for row in report(prod).destroy}
    assert rows[file_system["name"]].outcome == REFUSED
    for name in (claim["name"], volume["name"]):
        assert rows[name].outcome == DELETED
        assert f"data is kept in {file_system['name']}" in rows[name].how
        assert "reclaimPolicy Retain" in rows[name].how
    file_system["protect"] = False
    rows = {row.resource.name: row for row in report(prod).destroy}
    assert f"data is deleted with {file_system['name']}" in rows[claim["name"]].how


def test_replacing_the_claim_alone_leaves_its_retained_volume_released():
    prod = records("prod")
    claim, volume = _claim_and_volume(prod)
    (row,) = [line for line in markdown(report(prod)).splitlines() if line.startswith(f"| {claim['name']} |")]
    assert f"leaves PersistentVolume {volume['inputs']['metadata']['name']} Released" in row
    volume["inputs"]["spec"]["persistentVolumeReclaimPolicy"] = "Delete"
    (row,) = [line for line in markdown(report(prod)).splitlines() if line.startswith(f"| {claim['name']} |")]
    assert "Released" not in row


def test_a_dynamic_claim_follows_the_reclaim_policy_of_its_class():
    efs = records("prod-efs")
    (claim,) = of_kind(efs, "PersistentVolumeClaim")
    (storage_class,) = of_kind(efs, "StorageClass")
    stack = graph(efs)
    assert binding(stack, stack.named(claim["name"]), RULES).mode == storage_class["inputs"]["volumeBindingMode"]
    for policy, said in (("Retain", "stays outside the stack"), ("Delete", "volume and data are deleted")):
        storage_class["inputs"]["reclaimPolicy"] = policy
        (row,) = [r for r in report(efs).destroy if r.resource.name == claim["name"]]
        assert said in row.how
