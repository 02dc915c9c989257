"""The GPU pools a change replaces node by node (`tools.rollout.node_rolls`), with the targets they interrupt:
those whose DynamoGraphDeployment pods scheduled onto the pool's node group before the change (a target the
change adds is not running yet), named by their endpoint id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from serving_stack.contract.outputs import frontend_url
from serving_stack.names import POOL_LABEL
from tools.pr_diff.records import Render
from tools.rollout.graph import StackGraph
from tools.rollout.node_rolls import NodeRoll, node_rolls
from tools.rollout.rules import load_rules
from tools.rollout.workloads import pod_specs, selected_node_groups

DGD_KIND = "DynamoGraphDeployment"


@dataclass(frozen=True)
class PoolRoll:
    roll: NodeRoll
    targets: tuple[str, ...]  # endpoint ids of the targets running on the pool before the change, sorted


def targets_by_pool(records: Iterable[Mapping[str, Any]], outputs: Mapping[str, Any]) -> dict[str, list[str]]:
    """Pool name -> the endpoint ids (found by the frontend URL the contract builds from the DGD's name; else
    DGD names) of the targets whose pods schedule onto it."""
    graph, rules = StackGraph(records), load_rules()
    ids = {e.get("url"): e["id"] for e in outputs.get("endpoints") or []}
    pools: dict[str, list[str]] = {}
    for dgd in graph.kubernetes_objects(DGD_KIND):
        target = ids.get(frontend_url(dgd.object_name, dgd.namespace), dgd.object_name)
        for spec in pod_specs(dgd, rules):
            for group in selected_node_groups(graph, spec):
                pool = str((group.inputs.get("labels") or {}).get(POOL_LABEL, group.name))
                if target not in pools.setdefault(pool, []):
                    pools[pool].append(target)
    return pools


def pool_rolls(base: Render, head: Render) -> tuple[PoolRoll, ...]:
    before = [r.record for r in base.resources.values()]
    after = [r.record for r in head.resources.values()]
    interrupted = targets_by_pool(before, base.outputs)
    return tuple(PoolRoll(roll, tuple(sorted(interrupted.get(roll.pool, [])))) for roll in node_rolls(before, after))
