"""Shared helpers of the policy tests: validation args built directly (no engine), one policy run with a
list-collecting reporter, recipe manifests as fixtures, and the recorded dev/prod renders."""

from __future__ import annotations

import copy
import functools
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Optional

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import unknown_checking_proxy

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from policy.nemotron_policies.config import offline_stack
from policy.nemotron_policies.offline import Violation, evaluate
from policy.nemotron_policies.pack import POLICIES
from serving_stack.facts.catalog import load_catalog
from tools.mock_runtime import RecordedResource, run_program
from tools.secret_placeholders import stack_inputs

POLICY = {policy.name: policy for policy in POLICIES}
DGD = "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
JOB = "kubernetes:batch/v1:Job"
HF_TOKEN = "hf_" + "Zq7" * 12  # shaped like a Hugging Face token, not one


def options(protect: bool = False, retain_on_delete: Optional[bool] = None) -> PolicyResourceOptions:
    """Resource options as the engine builds them; `retain_on_delete` only when given (the offline runner's)."""
    opts = PolicyResourceOptions(protect, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    if retain_on_delete is not None:
        opts.retain_on_delete = retain_on_delete  # type: ignore[attr-defined]
    return opts


def urn_of(resource_type: str, name: str, stack: str = "test", parent_type: str = "") -> str:
    qualified = f"{parent_type}${resource_type}" if parent_type else resource_type
    return f"urn:pulumi:{stack}::nemotron-lightning::{qualified}::{name}"


def resource_args(
    resource_type: str,
    props: Any,
    name: str = "subject",
    config: Optional[dict[str, Any]] = None,
    parent_type: str = "",
) -> ResourceValidationArgs:
    """What the engine hands a resource validation: props behind the unknown-checking proxy (which copies the
    dicts and lists, so callers may keep mutating theirs); `parent_type` puts a parent component in the URN."""
    return ResourceValidationArgs(
        resource_type,
        unknown_checking_proxy(props),
        urn_of(resource_type, name, parent_type=parent_type),
        name,
        options(),
        None,
        config,
    )


def resource(
    resource_type: str,
    props: Any,
    name: str = "subject",
    *,
    protect: bool = False,
    retain_on_delete: Optional[bool] = None,
    dependencies: Iterable[PolicyResource] = (),
) -> PolicyResource:
    return PolicyResource(
        resource_type,
        unknown_checking_proxy(props),
        urn_of(resource_type, name),
        name,
        options(protect, retain_on_delete),
        None,
        None,
        list(dependencies),
        {},
    )


def check_resource(
    policy: str, resource_type: str, props: Any, config: Optional[dict[str, Any]] = None, parent_type: str = ""
) -> list[str]:
    """Messages `policy` reports for one resource."""
    messages: list[str] = []
    POLICY[policy].validate(
        resource_args(resource_type, props, config=config, parent_type=parent_type),
        lambda message, urn=None: messages.append(message),
    )
    return messages


def check_stack(
    policy: str, resources: list[PolicyResource], config: Optional[dict[str, Any]] = None, stack: str = "test"
) -> list[tuple[str, Optional[str]]]:
    """(message, urn) pairs `policy` reports for a stack of resources."""
    reported: list[tuple[str, Optional[str]]] = []
    with offline_stack(stack):
        POLICY[policy].validate(
            StackValidationArgs(resources, config), lambda message, urn=None: reported.append((message, urn))
        )
    return reported


def recipe(target_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A catalog target's ConfigMap and DGD (copies), in namespace `ns`."""
    config_map, dgd = load_catalog().recipe(target_id).copy_manifests()
    for manifest in (config_map, dgd):
        manifest["metadata"]["namespace"] = "ns"
    return config_map, dgd


def component(dgd: dict[str, Any], kind: str) -> dict[str, Any]:
    """The first component of a type (frontend/worker/prefill/decode)."""
    return next(c for c in dgd["spec"]["components"] if c["type"] == kind)


def main_container(component_or_spec: dict[str, Any]) -> dict[str, Any]:
    spec = component_or_spec.get("podTemplate", {}).get("spec", component_or_spec)
    return next(c for c in spec["containers"] if c["name"] == "main")


def env_value(container: dict[str, Any], name: str) -> dict[str, Any]:
    return next(e for e in container["env"] if e["name"] == name)


@functools.cache
def _recording(stack: str) -> tuple[RecordedResource, ...]:
    inputs = stack_inputs(stack, placeholders=True)  # as `make render` runs the committed stack
    return tuple(run_program(inputs.config, inputs.secret_keys, stack=stack).resources)


def recording_copy(resources: tuple[RecordedResource, ...]) -> list[RecordedResource]:
    return copy.deepcopy(list(resources))


def recording(stack: str) -> list[RecordedResource]:
    """The committed `Pulumi.<stack>.yaml` rendered under mocks (once per process), as a fresh deep copy."""
    return copy.deepcopy(list(_recording(stack)))


def retype(resource: RecordedResource, resource_type: str) -> None:
    """The same resource under another type token (its URN's own type included): another served version."""
    parts = resource.urn.split("::")
    parts[2] = "$".join([*parts[2].split("$")[:-1], resource_type])
    resource.type, resource.urn = resource_type, "::".join(parts)


def named(resources: list[RecordedResource], name: str) -> RecordedResource:
    (match,) = [r for r in resources if r.name == name]
    return match


def of_type(resources: list[RecordedResource], resource_type: str) -> list[RecordedResource]:
    return [r for r in resources if r.type == resource_type]


def components(resources: list[RecordedResource], dgd: str) -> dict[str, dict[str, Any]]:
    """A recorded DGD's components by type, `worker` named `agg` (the component name upstream uses)."""
    return {
        c["type"] if c["type"] != "worker" else "agg": c for c in named(resources, dgd).inputs["spec"]["components"]
    }


def worker(resources: list[RecordedResource], dgd: str, kind: str) -> dict[str, Any]:
    return main_container(components(resources, dgd)[kind])


def pod_spec(resources: list[RecordedResource], name: str) -> dict[str, Any]:
    """The pod spec of a recorded built-in workload."""
    return named(resources, name).inputs["spec"]["template"]["spec"]


def disaggregated(resources: list[RecordedResource]) -> str:
    """The name of the first recorded DGD with a prefill component."""
    return next(
        r.name for r in of_type(resources, DGD) if any(c["type"] == "prefill" for c in r.inputs["spec"]["components"])
    )


def aggregated(resources: list[RecordedResource]) -> str:
    """The name of the first recorded DGD with an aggregated worker."""
    return next(
        r.name for r in of_type(resources, DGD) if any(c["type"] == "worker" for c in r.inputs["spec"]["components"])
    )


def fabric_of(container: dict[str, Any]) -> str:
    """The RDMA fabric resource a worker container requests."""
    (fabric,) = [k for k in container["resources"]["limits"] if k in ("vpc.amazonaws.com/efa", "rdma/ib")]
    return fabric


def prewarm_env(container: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in container.get("env", []) if e["name"] in ("PREWARM_MODELS",))


def prewarm_daemon_sets(resources: list[RecordedResource]) -> list[RecordedResource]:
    """Recorded DaemonSets that declare the checkpoints they warm, by name."""
    found = []
    for daemon_set in of_type(resources, DAEMON_SET):
        containers = daemon_set.inputs["spec"]["template"]["spec"]["containers"]
        if any(e["name"] in ("PREWARM_MODELS",) for c in containers for e in c.get("env", [])):
            found.append(daemon_set)
    return sorted(found, key=lambda r: r.name)


def run_stack_config(raw: dict[str, Any], stack: str) -> list[RecordedResource]:
    """Run the program with these top-level config keys (unprefixed, as in `Pulumi.<stack>.yaml`)."""
    config = {f"nemotron-lightning:{key}": json.dumps(value) for key, value in raw.items()}
    config["nemotron-lightning:hfToken"] = "[secret]"
    return run_program(config, ["nemotron-lightning:hfToken"], stack=stack).resources


def mutate(stack: str, change: Callable[[list[RecordedResource]], None]) -> list[RecordedResource]:
    resources = recording(stack)
    change(resources)
    return resources


def new_violations(stack: str, resources: list[RecordedResource], **kwargs: Any) -> set[Violation]:
    """Violations of `resources` that the unchanged recording of `stack` does not have."""
    baseline = set(evaluate(recording(stack), stack=stack, **kwargs))
    return set(evaluate(resources, stack=stack, **kwargs)) - baseline


def object_forms(api_versions: Iterable[str], kind: str, body: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(label, type token, props) of one Kubernetes object in every form a program can declare it: as itself in
    each served version, as a server-side-apply patch, inside a `<Kind>List`, and inline in YAML components
    (`objs`, `yaml` text, the v2 component)."""
    forms: list[tuple[str, str, Any]] = []
    for api_version in api_versions:
        group, _, version = api_version.rpartition("/")
        token = f"kubernetes:{group or 'core'}/{version}:{kind}"
        obj = {"apiVersion": api_version, "kind": kind, **copy.deepcopy(body)}
        forms += [
            (f"{api_version} {kind}", token, obj),
            (f"{api_version} {kind}Patch", f"{token}Patch", copy.deepcopy(obj)),
            (f"{api_version} {kind}List", f"{token}List", {"items": [copy.deepcopy(obj)]}),
            (f"ConfigGroup objs {api_version}", "kubernetes:yaml:ConfigGroup", {"objs": [copy.deepcopy(obj)]}),
            (f"ConfigGroup yaml {api_version}", "kubernetes:yaml:ConfigGroup", {"yaml": [json.dumps(obj)]}),
            (f"yaml/v2 ConfigGroup {api_version}", "kubernetes:yaml/v2:ConfigGroup", {"objs": [copy.deepcopy(obj)]}),
        ]
    return forms


POD_HOLDERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Pod": (("v1",), ("spec",)),
    "Deployment": (("apps/v1", "extensions/v1beta1"), ("spec", "template", "spec")),
    "DaemonSet": (("apps/v1",), ("spec", "template", "spec")),
    "StatefulSet": (("apps/v1",), ("spec", "template", "spec")),
    "Job": (("batch/v1",), ("spec", "template", "spec")),
    "CronJob": (("batch/v1", "batch/v1beta1"), ("spec", "jobTemplate", "spec", "template", "spec")),
    "LeaderWorkerSet": (("leaderworkerset.x-k8s.io/v1",), ("spec", "leaderWorkerTemplate", "workerTemplate", "spec")),
}


def pod_forms(pod: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(label, type token, props) of one pod spec in every workload kind (a custom resource included), each in
    every form of `object_forms`."""
    forms = []
    for kind, (api_versions, path) in POD_HOLDERS.items():
        body: dict[str, Any] = {"metadata": {"name": "w", "namespace": "ns"}}
        node = body
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = copy.deepcopy(pod)
        forms += object_forms(api_versions, kind, body)
    return forms
