"""Which day-2 changes replace every node of a GPU pool, and what that costs in time and GPU-hours.

An EKS managed node group replaces its nodes (a rolling update, `maxUnavailable` 1: one node at a time) when
its Kubernetes `version` or AMI `releaseVersion` changes, when the launch template it follows gets a new
version (any change of the template's data: network interfaces, block devices, user data, metadata options,
the tag specifications the stack tags reach the instances through), and it is replaced outright when a
replace-forcing input changes (instance types, AMI type, capacity type, subnets: provider_rules.yaml). Only
the template's own resource `tags` and `description` are not template data. PULUMI-FACTS.md (corrections):
"a new launch-template version (any change of its inputs, tags included) rolls every node".

    rolls = node_rolls(before_records, after_records)   # a change: what `make diff` shows
    guide = pool_roll_guide(StackGraph(records), rules) # one render: the rollout section's day-2 table
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from serving_stack.facts.aws import load_aws_catalog
from tools.rollout.durations import GPU_NODE_BOOT
from tools.rollout.graph import Resource, StackGraph, lookup
from tools.rollout.replacements import replace_fields
from tools.rollout.rules import Rules, load_rules
from tools.rollout.workloads import gpu_node_groups, pool_name
from tools.rollout.workloads import launch_template as _template

NOT_TEMPLATE_DATA = frozenset({"tags", "tagsAll", "description", "updateDefaultVersion", "name", "namePrefix"})
# What a change of each of these does to a pool, for the guide in summary.md.
DAY2_CHANGES = (
    "the cluster's `kubernetesVersion` (the node group's `version`)",
    "the AMI release (`releaseVersion`)",
    "the launch template (EFA layout, root volume, RAID0 user data, metadata options, the reservation)",
    "a stack tag (`aws.tags`: the template's tag specifications, hence a new template version)",
    "the instance type, AMI type, capacity type or zone (the node group is replaced)",
)


@dataclass(frozen=True)
class NodeRoll:
    """Every node of `pool` is replaced because of `why`; one node at a time, each for `minutes_per_node`."""

    pool: str
    why: tuple[str, ...]
    nodes: int
    gpus_per_node: int
    minutes_per_node: float
    estimated: bool

    @property
    def minutes(self) -> float:
        return self.nodes * self.minutes_per_node

    @property
    def gpu_hours(self) -> float:
        return self.nodes * self.gpus_per_node * self.minutes_per_node / 60

    def line(self) -> str:
        star = " (estimate)" if self.estimated else ""
        return (
            f"replaces every node of pool {self.pool} ({self.nodes} x {self.gpus_per_node} GPUs): "
            f"~{self.minutes:g} min, ~{self.gpu_hours:.1f} GPU-hours out of service{star}; "
            f"because {'; '.join(self.why)}"
        )


def _instance_type(group: Resource, template: Resource | None) -> str | None:
    types = group.inputs.get("instanceTypes") or []
    return str(types[0]) if types else (str(template.inputs.get("instanceType")) if template else None)


def _roll(group: Resource, template: Resource | None, why: list[str], rules: Rules) -> NodeRoll:
    span = rules.span(GPU_NODE_BOOT)
    instance = load_aws_catalog().instance_types.get(_instance_type(group, template) or "")
    nodes = int(lookup(group.inputs, "scalingConfig.desiredSize") or 0)
    return NodeRoll(pool_name(group), tuple(why), nodes, instance.gpus if instance else 0, span.typical, span.estimated)


def _template_changes(old: Resource | None, new: Resource | None) -> list[str]:
    if old is None or new is None:
        return []
    keys = sorted(k for k in {*old.inputs, *new.inputs} - NOT_TEMPLATE_DATA if old.inputs.get(k) != new.inputs.get(k))
    if keys == ["tagSpecifications"]:
        return [
            "a stack tag changed: the launch template's tag specifications (how the tags reach the instances) get a new version"
        ]
    return [f"the launch template changed (`{'`, `'.join(keys)}`): a new template version"] if keys else []


def node_rolls(
    before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]], rules: Rules | None = None
) -> list[NodeRoll]:
    """The GPU pools whose every node an update from `before` to `after` replaces, with why."""
    rules = rules or load_rules()
    old_graph, new_graph = StackGraph(before), StackGraph(after)
    rolls = []
    for group in gpu_node_groups(new_graph, rules):
        previous = old_graph.get(group.key)
        if previous is None:
            continue
        template, old_template = _template(new_graph, group), _template(old_graph, previous)
        why = [
            f"`{field}` changes ({lookup(previous.inputs, field)} -> {lookup(group.inputs, field)}): the node group is replaced"
            for field in replace_fields(group, rules)
            if field not in ("launchTemplate.id", "launchTemplate.name")
            and lookup(previous.inputs, field) != lookup(group.inputs, field)
        ]
        for field, what in (("version", "Kubernetes version"), ("releaseVersion", "AMI release")):
            if previous.inputs.get(field) != group.inputs.get(field):
                why.append(f"{what} {previous.inputs.get(field)} -> {group.inputs.get(field)}: a rolling node update")
        if template is not None and old_template is not None and template.key == old_template.key:
            why += _template_changes(old_template, template)
        if why:
            rolls.append(_roll(group, template, why, rules))
    return rolls


def pool_roll_guide(graph: StackGraph, rules: Rules) -> list[str]:
    """The rollout section's day-2 table: what replacing every node of each GPU pool costs, and what does it."""
    rows = [_roll(g, _template(graph, g), [], rules) for g in gpu_node_groups(graph, rules)]
    if not rows:
        return []
    lines = [
        "### Day-2 changes that replace every GPU node",
        "",
        "Each of these replaces every node of a pool, one node at a time (`maxUnavailable` 1); `make diff` "
        "names the pools a change replaces:",
        "",
        *(f"- {change}" for change in DAY2_CHANGES),
        "",
        "| pool | nodes x GPUs | time | GPU-hours out of service |",
        "| --- | --- | --- | --- |",
    ]
    for row in rows:
        star = "*" if row.estimated else ""
        lines.append(
            f"| {row.pool} | {row.nodes} x {row.gpus_per_node} | ~{row.minutes:g} min{star} | ~{row.gpu_hours:.1f}{star} |"
        )
    return [*lines, "", "\\* estimate: per node, the GPU node boot of catalog/durations.yaml.", ""]
