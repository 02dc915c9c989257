"""The timeline of a first `up`: parallel branches overlap, steps wait for what they depend on, durations come
from durations.yaml and the recorded inputs, and the critical path explains the predicted time to a token."""
from __future__ import annotations

import pytest
from rollout_helpers import RULES, of_kind, records, report

from tools.rollout.durations import checkpoints_named, work
from tools.rollout.graph import StackGraph
from tools.rollout.report import markdown

CLUSTER = "aws:eks/cluster:Cluster"
NAT = "aws:ec2/natGateway:NatGateway"
TARGET_MINUTES = 25  # issue 10: prod's first served token within 25 minutes


def _record(type_token: str, name: str, depends_on: list[str] = ()) -> dict:
    return {"type": type_token, "name": name, "parent": "", "custom": True, "provider": "", "dependsOn": list(depends_on),
            "propertyDependencies": {}, "protect": False, "retainOnDelete": False, "deleteBeforeReplace": False,
            "customTimeouts": {}, "inputs": {}}


def test_independent_branches_overlap_and_a_join_waits_for_the_slower_one():
    cluster, nat = _record(CLUSTER, "cluster"), _record(NAT, "nat")
    join = _record("aws:iam/role:Role", "join", [f"{CLUSTER}::cluster", f"{NAT}::nat"])
    timeline = report([cluster, nat, join]).timeline
    slow = max(RULES.durations["types"][CLUSTER]["typical"], RULES.durations["types"][NAT]["typical"])
    assert timeline.steps[f"{NAT}::nat"].start == timeline.steps[f"{CLUSTER}::cluster"].start == 0
    assert timeline.steps["aws:iam/role:Role::join"].start == pytest.approx(slow)


def test_every_step_starts_after_what_it_depends_on():
    prod = report(records("prod"))
    graph, steps = prod.graph, prod.timeline.steps
    for key, step in steps.items():
        for dependency in graph.direct_dependencies(key):
            assert step.start >= steps[dependency].up_done - 1e-9, (key, dependency)


def test_the_critical_path_is_a_chain_ending_at_the_first_dynamo_token():
    prod = report(records("prod"))
    first = prod.first_token(dynamo_only=True)
    path = prod.timeline.path_to(first.resource.key)
    assert path[-1] is first
    for earlier, later in zip(path, path[1:], strict=False):
        assert later.ready == pytest.approx(max(later.start, earlier.ready) + later.work.typical, abs=0.01)


def test_the_download_job_takes_its_checkpoints_over_the_download_rate():
    dev = records("dev")
    (job,) = [j for j in of_kind(dev, "Job") if j["name"].endswith("download")]
    graph = StackGraph(dev)
    resource = graph.named(job["name"])
    repos = checkpoints_named(resource, RULES)
    assert set(repos) >= {e["value"] for e in job["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]
                          if "MODEL" in e["name"] and "value" in e}
    table = RULES.durations["checkpoints"]
    gigabytes = sum(table["sizes_gb"].get(r, table["default_gb"])["size"] for r in repos)
    assert work(graph, resource, RULES).typical >= gigabytes * 1000 / table["download_mb_per_s"]["typical"] / 60


def test_a_claim_on_an_fsx_class_takes_the_file_system_provisioning():
    prod = report(records("prod"))
    (claim,) = [s for s in prod.timeline.steps.values() if s.resource.kind == "PersistentVolumeClaim"]
    assert claim.work.typical == RULES.durations["provisioning"]["fsx-lustre"]["typical"]


def test_the_summary_names_the_slowest_steps_and_what_each_waits_for():
    prod = report(records("prod"))
    text = markdown(prod)
    first = prod.first_token(dynamo_only=True)
    path = prod.timeline.path_to(first.resource.key)
    slowest = sorted(path, key=lambda s: s.work.typical, reverse=True)[0]
    assert f"{slowest.resource.name} {slowest.work.typical:.1f} min (after " in text
    assert "```mermaid\ngantt" in text and f"**{first.ready:.1f} min**" in text


@pytest.mark.xfail(strict=True, reason="the model cache's FSx file system is provisioned by the CSI driver only after the "
                                       "cluster, system nodes and CSI add-on exist (~16 min in): a statically created "
                                       "file system would overlap with the cluster; the summary names this step")
def test_prod_first_dynamo_token_within_the_target():
    assert report(records("prod")).first_token(dynamo_only=True).ready <= TARGET_MINUTES
