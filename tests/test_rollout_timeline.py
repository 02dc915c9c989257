"""The timeline of a first `up`: parallel branches overlap, steps wait for what they depend on, durations come
from the durations table (catalog/durations.yaml) and the recorded inputs, and the critical path explains the
predicted time to a token."""

from __future__ import annotations

import itertools

import pytest
from rollout_helpers import RULES, of_kind, plant_dynamic_fsx_class, records, report

from serving_stack.facts.catalog import load_checkpoint_sizes
from tools.rollout.cold_start import explain
from tools.rollout.durations import HUB_DOWNLOAD, SMOKE_TEST, checkpoints_named, work
from tools.rollout.graph import StackGraph
from tools.rollout.report import markdown

CLUSTER = "aws:eks/cluster:Cluster"
NAT = "aws:ec2/natGateway:NatGateway"


def _record(type_token: str, name: str, depends_on: list[str] = ()) -> dict:
    return {
        "type": type_token,
        "name": name,
        "parent": "",
        "custom": True,
        "provider": "",
        "dependsOn": list(depends_on),
        "propertyDependencies": {},
        "protect": False,
        "retainOnDelete": False,
        "deleteBeforeReplace": False,
        "customTimeouts": {},
        "inputs": {},
    }


def test_independent_branches_overlap_and_a_join_waits_for_the_slower_one():
    cluster, nat = _record(CLUSTER, "cluster"), _record(NAT, "nat")
    join = _record("aws:iam/role:Role", "join", [f"{CLUSTER}::cluster", f"{NAT}::nat"])
    timeline = report([cluster, nat, join]).timeline
    slow = max(RULES.span(RULES.aws_durations[CLUSTER]).typical, RULES.span(RULES.aws_durations[NAT]).typical)
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
    for earlier, later in itertools.pairwise(path[:-1]):
        assert later.ready == pytest.approx(max(later.start, earlier.ready) + later.work.typical, abs=0.01)
    # the graph's own steps: from the step that decided its pods' start to its ready time, as they overlap
    assert first.parts and first.parts[-1].end / 60 == pytest.approx(first.ready)
    assert min(p.start for p in first.parts if p.critical) / 60 >= path[-2].ready - 1e-9


def test_the_download_job_takes_its_checkpoints_over_the_download_rate():
    dev = records("dev")
    (job,) = [j for j in of_kind(dev, "Job") if j["name"].endswith("download")]
    graph = StackGraph(dev)
    resource = graph.named(job["name"])
    repos = checkpoints_named(resource, RULES)
    assert set(repos) >= {
        e["value"]
        for e in job["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]
        if "MODEL" in e["name"] and "value" in e
    }
    sizes = load_checkpoint_sizes()
    gigabytes = sum(sizes.repositories.get(r, sizes.unlisted).sizeGB for r in repos)
    rate = RULES.durations.rates[HUB_DOWNLOAD].mbPerSecond
    assert work(graph, resource, RULES).typical >= gigabytes * 1000 / rate / 60


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_job_that_downloads_nothing_runs_its_program_and_up_waits_for_it(stack):
    stack_records = records(stack)
    graph = StackGraph(stack_records)
    rollout = report(stack_records)
    jobs = [graph.named(j["name"]) for j in of_kind(stack_records, "Job")]
    smoke = [j for j in jobs if not checkpoints_named(j, RULES)]
    assert smoke, "the stack renders no smoke Job"
    for job in smoke:
        assert work(graph, job, RULES).typical >= RULES.span(SMOKE_TEST).typical
        assert rollout.timeline.up_minutes() >= rollout.timeline.steps[job.key].ready


def test_a_claim_on_a_dynamic_fsx_class_takes_the_file_system_provisioning():
    prod = records("prod")
    _, claim = plant_dynamic_fsx_class(prod)
    step = report(prod).timeline.steps[f"{claim['type']}::{claim['name']}"]
    fsx = RULES.span(RULES.provisioners["fsx.csi.aws.com"]["duration"])
    assert step.work.typical == fsx.typical
    assert step.ready - step.start == pytest.approx(fsx.typical)


def test_the_summary_shows_the_first_token_path_with_a_gantt():
    prod = report(records("prod"))
    text = markdown(prod)
    first = prod.first_token(dynamo_only=True)
    assert "```mermaid\ngantt" in text
    assert f"First Dynamo token: {first.ready:.1f} min" in text.splitlines()


def _first_graph(rollout):
    first = rollout.first_token(dynamo_only=True)
    return first, explain(rollout.graph, rollout.timeline, first.resource.key)


def test_every_step_of_the_critical_path_says_why_it_waits_for_the_one_before():
    for stack in ("dev", "prod"):
        rollout = report(records(stack))
        first, hops = _first_graph(rollout)
        assert hops[-1].step is first
        assert hops[0].after == ""
        for earlier, later in itertools.pairwise(hops):
            assert later.after == earlier.step.resource.name
            assert later.kinds
            assert later.why
        text = markdown(rollout)
        assert all(f"{h.after}: " in text for h in hops[1:])
    (serving,) = [h for h in hops if h.step is first]
    assert serving.kinds == ("readiness",)


def test_the_graph_lists_kubernetes_objects_by_kind_and_keeps_kindless_ones_only_among_all():
    records = [
        {**_record("kubernetes:core/v1:ConfigMap", "b"), "inputs": {"kind": "ConfigMap"}},
        {**_record("kubernetes:core/v1:ConfigMap", "a"), "inputs": {"kind": "ConfigMap"}},
        _record("kubernetes:core/v1:Secret", "kindless"),  # no `kind` in its inputs
        _record(NAT, "nat"),
    ]
    graph = StackGraph(records)
    assert [r.name for r in graph.kubernetes_objects()] == ["a", "b", "kindless"]
    assert [r.name for r in graph.kubernetes_objects("ConfigMap")] == ["a", "b"]
    assert graph.kubernetes_objects("Secret") == []
    graph.kubernetes_objects("ConfigMap").clear()  # a copy: the graph's index is its own
    assert len(graph.kubernetes_objects("ConfigMap")) == 2
