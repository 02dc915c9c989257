"""The small language of `tests/data/planted_violations.yaml`: each case is a list of steps applied to a
recorded render, each step naming its subject by role or type (never by the stack's resource names, so the
cases keep holding as the stacks change).

Steps:
- `{set: PATH, value: V}` / `{append: PATH, value: V}` / `{remove: PATH}` on the subject `of: SELECTOR`;
- `{arg: PATH-to-args, flag: F, value: V}`: the value after flag F in an args list;
- `{add: {type, name, parent?, depends_on?, inputs}}`: a new resource (parent: a selector, becomes its parent
  component; depends_on: selectors of resources it depends on);
- `{delete: true}` on `of: SELECTOR`: the resource is gone;
- `{retype: TYPE}` on `of: SELECTOR`: the same inputs under another type token (another served version);
- `{to_v1alpha1: true}` on `of: SELECTOR`: a v1beta1 DGD rewritten as the v1alpha1 DGD the operator reads the
  same way (`dynamo_v1alpha1.py`).
A SELECTOR is `{role: R}` (see ROLES) or `{type: T, index: N}`. A PATH is a list of keys, indices and
`{field: value}` matchers of list elements. Values may hold `{json: V}` (V as JSON text), `{base64: S}`, `{base64_gzip: S}` (gzip, then base64) and
`{name_of: SELECTOR}` (that resource's metadata.name).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable
from typing import Any

from dynamo_v1alpha1 import to_v1alpha1
from policy_helpers import aggregated, disaggregated, named, of_type, prewarm_daemon_sets, retype

from tools.mock_runtime import RecordedResource

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
NEUTRAL_STEPS = frozenset({"to_v1alpha1"})  # steps that change how objects are written, not what they do
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
POOL_LABEL = "nemotron.nvidia.com/pool"


def _config_map_of(resources: list[RecordedResource], dgd_name: str) -> RecordedResource:
    """The ConfigMap registered beside a DGD (same parent component)."""
    parent = named(resources, dgd_name).parent
    return next(r for r in of_type(resources, CONFIG_MAP) if r.parent == parent)


def _pool_node_group(resources: list[RecordedResource], dgd_name: str) -> RecordedResource:
    """The node group of the pool a DGD's workers are pinned to."""
    text = json.dumps(named(resources, dgd_name).inputs)
    return next(
        r
        for r in of_type(resources, "aws:eks/nodeGroup:NodeGroup")
        if f'"values": ["{r.inputs["labels"].get(POOL_LABEL)}"]' in text
    )


def _release(resources: list[RecordedResource], parent_type: str) -> RecordedResource:
    return next(r for r in of_type(resources, HELM_RELEASE) if r.parent.startswith(f"{parent_type}::"))


ROLES: dict[str, Callable[[list[RecordedResource]], RecordedResource]] = {
    "disaggregated-dgd": lambda r: named(r, disaggregated(r)),
    "aggregated-dgd": lambda r: named(r, aggregated(r)),
    "disaggregated-config-map": lambda r: _config_map_of(r, disaggregated(r)),
    "disaggregated-pool-node-group": lambda r: _pool_node_group(r, disaggregated(r)),
    "prewarm-daemonset": lambda r: prewarm_daemon_sets(r)[0],
    "platform-release": lambda r: _release(r, "nemotron:dynamo:DynamoPlatform"),
    "device-plugin-release": lambda r: _release(r, "nemotron:kubernetes:DevicePlugins"),
    "sagemaker-role-policy": lambda r: next(
        x
        for x in of_type(r, "aws:iam/rolePolicy:RolePolicy")
        if x.parent.startswith("nemotron:aws:SageMakerEndpoint::")
    ),
    "sagemaker-role": lambda r: next(
        x for x in of_type(r, "aws:iam/role:Role") if x.parent.startswith("nemotron:aws:SageMakerEndpoint::")
    ),
    "gateway-network-policy": lambda r: next(
        x
        for x in of_type(r, "kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if x.parent.startswith("nemotron:kubernetes:Gateway::")
        and x.inputs["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") == "gateway"
    ),
    "gateway-invoke-policy": lambda r: next(
        x for x in of_type(r, "aws:iam/rolePolicy:RolePolicy") if x.parent.startswith("nemotron:kubernetes:Gateway::")
    ),
}


def select(resources: list[RecordedResource], selector: dict[str, Any]) -> RecordedResource:
    if "role" in selector:
        return ROLES[selector["role"]](resources)
    return of_type(resources, selector["type"])[selector.get("index", 0)]


def value_of(value: Any, resources: list[RecordedResource]) -> Any:
    """A step's value with `{json: V}` and `{base64: S}` encoded and `{name_of: SELECTOR}` resolved to that
    resource's `metadata.name`."""
    if isinstance(value, dict) and set(value) == {"json"}:
        return json.dumps(value_of(value["json"], resources))
    if isinstance(value, dict) and set(value) == {"base64"}:
        return base64.b64encode(value["base64"].encode()).decode()
    if isinstance(value, dict) and set(value) == {"base64_gzip"}:
        return base64.b64encode(gzip.compress(value["base64_gzip"].encode(), mtime=0)).decode()
    if isinstance(value, dict) and set(value) == {"name_of"}:
        return select(resources, value["name_of"]).inputs["metadata"]["name"]
    if isinstance(value, dict):
        return {k: value_of(v, resources) for k, v in value.items()}
    if isinstance(value, list):
        return [value_of(v, resources) for v in value]
    return value


def _step_into(node: Any, step: Any, create: bool) -> Any:
    if isinstance(step, dict):
        ((field, wanted),) = step.items()
        return next(item for item in node if isinstance(item, dict) and item.get(field) == wanted)
    if isinstance(node, dict) and create and step not in node:
        node[step] = {}
    return node[step]


def walk(root: Any, path: list[Any], create: bool = False) -> tuple[Any, Any]:
    """(container, last step) of `path` in `root`."""
    node = root
    for step in path[:-1]:
        node = _step_into(node, step, create)
    return node, path[-1]


def apply_step(resources: list[RecordedResource], step: dict[str, Any]) -> None:
    if "add" in step:
        spec = step["add"]
        parent = select(resources, spec["parent"]) if "parent" in spec else None
        qualified = f"{parent.type}${spec['type']}" if parent else spec["type"]
        resources.append(
            RecordedResource(
                type=spec["type"],
                name=spec["name"],
                urn=f"urn:pulumi:test::nemotron-lightning::{qualified}::{spec['name']}",
                parent=f"{parent.type}::{parent.name}" if parent else "",
                custom=True,
                inputs=value_of(spec["inputs"], resources),
                depends_on=[f"{d.type}::{d.name}" for d in (select(resources, s) for s in spec.get("depends_on", []))],
                protect=spec.get("protect", False),
            )
        )
        return
    subject = select(resources, step["of"])
    if "delete" in step:
        resources.remove(subject)
    elif "retype" in step:
        retype(subject, step["retype"])
    elif "to_v1alpha1" in step:
        to_v1alpha1(subject)
    elif "set" in step:
        node, last = walk(subject.inputs, step["set"], create=True)
        node[last] = value_of(step["value"], resources)
    elif "append" in step:
        node, last = walk(subject.inputs, step["append"], create=True)
        node.setdefault(last, []) if isinstance(node, dict) else None
        node[last].append(value_of(step["value"], resources))
    elif "remove" in step:
        node, last = walk(subject.inputs, step["remove"])
        if isinstance(last, dict):
            node.remove(_step_into(node, last, False))
        else:
            del node[last]
    elif "arg" in step:
        node, last = walk(subject.inputs, step["arg"])
        arguments = node[last]
        arguments[arguments.index(step["flag"]) + 1] = value_of(step["value"], resources)
    else:
        raise ValueError(f"unknown step {sorted(step)}")
    if "protect" in step:
        subject.protect = step["protect"]
