"""A stack selecting every catalog target on an existing cluster passes the pack once the cluster states an
out-of-band fabric for the workers whose recipes request none (the GB200 disaggregated ones: multi-node
NVLink), and fails only fabric-requests, only on those workers, until it does. Which targets those are is read
from the catalog's recipes, not listed here.

The stack states the fabric through node affinity on `nemotron.nvidia.com/fabric-out-of-band` (the per-pool
config key the lead wires; `with_out_of_band_nodes` applies what its placement will render)."""

from __future__ import annotations

import contextlib
import copy
import functools
import json

import pytest
import yaml
from dynamo_v1alpha1 import to_v1alpha1
from policy_helpers import DGD, REPO, of_type, prewarm_daemon_sets, recording_copy, run_stack_config

from policy.nemotron_policies.offline import evaluate, format_report
from serving_stack.facts.catalog import load_catalog
from tools.mock_runtime import RecordedResource

OUT_OF_BAND = "nemotron.nvidia.com/fabric-out-of-band"
FABRIC_RESOURCES = ("vpc.amazonaws.com/efa", "rdma/ib")
DISAGGREGATED = ("prefill", "decode")


@functools.lru_cache(maxsize=1)
def _all_targets() -> tuple[RecordedResource, ...]:
    raw = {
        key.split(":", 1)[1]: value
        for key, value in yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())["config"].items()
    }
    raw["targets"] = [{"id": target_id} for target_id in load_catalog().recipes]
    raw["modelCache"].pop("checkpoints")  # the defaults: base and every draft
    return tuple(run_stack_config(raw, "all-targets"))


def all_targets() -> list[RecordedResource]:
    return recording_copy(_all_targets())


def fabricless_workers() -> set[tuple[str, str]]:
    """(DGD name, component) of disaggregated workers whose upstream recipe requests no fabric resource."""
    found = set()
    for recipe in load_catalog().recipes.values():
        _, dgd = recipe.copy_manifests()
        for component in dgd["spec"]["components"]:
            containers = component["podTemplate"]["spec"]["containers"]
            if component["type"] in DISAGGREGATED and not any(
                key in FABRIC_RESOURCES for c in containers for key in c.get("resources", {}).get("limits", {})
            ):
                found.add((dgd["metadata"]["name"], component["name"]))
    return found


def _require_out_of_band(pod_spec: dict, name: str) -> None:
    required = pod_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    for term in required["nodeSelectorTerms"]:
        term["matchExpressions"].append({"key": OUT_OF_BAND, "operator": "In", "values": [name]})


def with_out_of_band_nodes(resources: list[RecordedResource], name: str = "gb200-mnnvl") -> list[RecordedResource]:
    """What placement on a pool that states its fabric out of band renders: its disaggregated workers without a
    fabric request require the pool's out-of-band node label, and (the prewarm plan groups workers by
    placement) a prewarm DaemonSet selects exactly those nodes."""
    placements = set()
    for dgd in of_type(resources, DGD):
        for component in dgd.inputs["spec"]["components"]:
            if (dgd.inputs["metadata"]["name"], component["name"]) in fabricless_workers():
                placements.add(json.dumps(component["podTemplate"]["spec"]["affinity"], sort_keys=True))
                _require_out_of_band(component["podTemplate"]["spec"], name)
    for daemon_set in prewarm_daemon_sets(resources):
        pod_spec = daemon_set.inputs["spec"]["template"]["spec"]
        if json.dumps(pod_spec["affinity"], sort_keys=True) in placements:
            twin = copy.deepcopy(daemon_set)
            twin.name, twin.urn = f"{daemon_set.name}-{name}", f"{daemon_set.urn}-{name}"
            twin.inputs["metadata"]["name"] = f"{twin.inputs['metadata']['name']}-{name}"
            _require_out_of_band(twin.inputs["spec"]["template"]["spec"], name)
            resources.append(twin)
    return resources


def mandatory(resources: list[RecordedResource]) -> list:
    return [v for v in evaluate(resources, stack="all-targets") if v.mandatory]


def test_the_catalog_has_fabricless_disaggregated_workers():
    assert fabricless_workers(), "no recipe left to exercise the out-of-band case"


def test_without_a_stated_fabric_only_the_fabricless_workers_fail_fabric_requests():
    resources = all_targets()
    object_name = {r.urn: r.inputs["metadata"]["name"] for r in of_type(resources, DGD)}
    found = mandatory(resources)
    assert {v.policy_name for v in found} == {"fabric-requests"}
    assert {
        (object_name[v.urn], v.message.split(":")[0].removeprefix("component ")) for v in found
    } == fabricless_workers()


def test_with_out_of_band_nodes_every_catalog_target_passes():
    violations = evaluate(with_out_of_band_nodes(all_targets()), stack="all-targets")
    assert [v for v in violations if v.mandatory] == [], format_report(violations)


@pytest.mark.parametrize("stated", [True, False])
def test_every_served_dgd_version_is_judged_alike(stated):
    resources = with_out_of_band_nodes(all_targets()) if stated else all_targets()
    converted = with_out_of_band_nodes(all_targets()) if stated else all_targets()
    for dgd in of_type(converted, DGD):
        to_v1alpha1(dgd)

    def verdicts(found: list) -> set[tuple[str, str, str]]:
        return {(v.policy_name, v.resource.split("::")[1], v.message.replace("service ", "component ")) for v in found}

    assert verdicts(evaluate(converted, stack="all-targets")) == verdicts(evaluate(resources, stack="all-targets"))


def test_policies_share_one_plain_copy_per_resource_and_none_changes_it(monkeypatch):
    """The offline run hands every policy the same copy of a resource's properties, which is only sound while
    no rule writes to what it reads: after the whole pack ran on every catalog target, each shared copy still
    equals a fresh copy of the resource."""
    from policy.nemotron_policies import offline, values

    shared: list[dict] = []
    real = values.shared_plain_copies

    @contextlib.contextmanager
    def recorded():
        with real() as copies:
            shared.append(copies)
            yield copies

    monkeypatch.setattr(offline, "shared_plain_copies", recorded)
    resources = with_out_of_band_nodes(all_targets())
    evaluate(resources, stack="all-targets")
    (copies,) = shared
    assert len(copies) >= len(resources)  # every resource's properties were read and copied once
    for target, copied in copies.values():
        assert copied == values.plain(target)
    assert values.plain({"a": [1]}) is not values.plain({"a": [1]})  # no sharing outside an offline run
