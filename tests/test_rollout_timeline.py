"""The timeline of a first `up`: parallel branches overlap, steps wait for what they depend on, durations come
from durations.yaml and the recorded inputs, and the critical path explains the predicted time to a token."""

from __future__ import annotations

import itertools

import pytest
import yaml
from rollout_helpers import RULES, of_kind, plant_dynamic_fsx_class, records, report

from tools.rollout import analyse
from tools.rollout.critical_path import explain
from tools.rollout.durations import checkpoints_named, work
from tools.rollout.graph import StackGraph
from tools.rollout.report import markdown
from tools.rollout.rules import DURATIONS_FILE, PROVIDER_RULES_FILE, load_rules

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
    for earlier, later in itertools.pairwise(path):
        assert later.ready == pytest.approx(max(later.start, earlier.ready) + later.work.typical, abs=0.01)


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
    table = RULES.durations["checkpoints"]
    gigabytes = sum(table["sizes_gb"].get(r, table["default_gb"])["size"] for r in repos)
    assert work(graph, resource, RULES).typical >= gigabytes * 1000 / table["download_mb_per_s"]["typical"] / 60


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_job_that_downloads_nothing_runs_its_program_and_up_waits_for_it(stack):
    stack_records = records(stack)
    graph = StackGraph(stack_records)
    rollout = report(stack_records)
    jobs = [graph.named(j["name"]) for j in of_kind(stack_records, "Job")]
    smoke = [j for j in jobs if not checkpoints_named(j, RULES)]
    assert smoke, "the stack renders no smoke Job"
    for job in smoke:
        assert work(graph, job, RULES).typical >= RULES.durations["job_run"]["typical"]
        assert rollout.timeline.up_minutes() >= rollout.timeline.steps[job.key].ready


def test_a_claim_on_a_dynamic_fsx_class_takes_the_file_system_provisioning():
    prod = records("prod")
    _, claim = plant_dynamic_fsx_class(prod)
    step = report(prod).timeline.steps[f"{claim['type']}::{claim['name']}"]
    fsx = RULES.durations["provisioning"]["fsx-lustre"]
    assert step.work.typical == fsx["typical"]
    assert step.ready - step.start == pytest.approx(fsx["typical"])


def test_the_summary_names_the_slowest_steps_and_what_each_waits_for():
    prod = report(records("prod"))
    text = markdown(prod)
    first = prod.first_token(dynamo_only=True)
    path = prod.timeline.path_to(first.resource.key)
    slowest = sorted(path, key=lambda s: s.work.typical, reverse=True)[0]
    assert f"{slowest.resource.name} {slowest.work.typical:.1f} min (after " in text
    assert "```mermaid\ngantt" in text
    assert f"**{first.ready:.1f} min**" in text


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
    assert serving.inherent


def test_prod_first_dynamo_graph_against_the_target_says_what_it_rests_on():
    """Whatever prod selects: the verdict is the one its timeline computes, and it names the estimates."""
    rollout = report(records("prod"))
    first, hops = _first_graph(rollout)
    target = RULES.durations["first_token_target_minutes"]["value"]
    verdict = "**met**" if first.ready <= target else "**not met**"
    text = markdown(rollout)
    assert f"{verdict}, {first.ready:.1f} min against {target:g} min" in text
    line = text.split(verdict)[1].split("\n")[0]
    if first.ready <= target:  # the spare time rests on these estimates
        estimated = [h.step.resource.name for h in hops if h.step.work.estimated and h.step.work.typical >= 0.5]
        assert estimated
        assert all(f"{name} " in line for name in estimated)
    else:  # the step that keeps it longer
        binding = max(hops, key=lambda h: h.step.work.typical)
        assert f"is **{binding.step.resource.name}**" in line


def test_a_stack_beyond_the_target_names_the_step_that_keeps_it_longer_and_why(tmp_path):
    durations = yaml.safe_load(DURATIONS_FILE.read_text())
    durations["node_groups"]["gpu"]["typical"] = durations["node_groups"]["gpu"]["max"]  # GPU nodes at their worst
    slow = tmp_path / "durations.yaml"
    slow.write_text(yaml.safe_dump(durations))
    rollout = analyse(records("prod"), load_rules(PROVIDER_RULES_FILE, slow))
    first, hops = _first_graph(rollout)
    assert first.ready > durations["first_token_target_minutes"]["value"]
    binding = max(hops, key=lambda h: h.step.work.typical)
    follower = hops[hops.index(binding) + 1]
    text = markdown(rollout)
    assert "**not met**" in text
    assert f"is **{binding.step.resource.name}**" in text
    assert f"{follower.step.resource.name} cannot overlap it because {follower.why}" in text


def test_a_stack_on_an_existing_cluster_has_no_target_line():
    assert "Target (" not in markdown(report(records("dev")))


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
