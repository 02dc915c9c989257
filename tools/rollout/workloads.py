"""What a workload's pods need before they can become Ready: its readiness prerequisites.

Read from the pod specs the render recorded: claims they mount (and the Job that fills a claim they only
read), Secrets and ConfigMaps they reference, their PriorityClass, the node groups their node affinity
selects, the device plugins that advertise the extended resources they request, and the operator that
turns a custom resource into pods. A prerequisite the stack does not create is reported as missing.

And what the render says about a node group's nodes: its launch template, and how they get a container image
(the nodeadm NodeConfig in the template's user data: the `FastImagePull` feature gate turns on SOCI parallel
pull; a data volume from an EBS snapshot mounted at /var/lib/containerd holds the images already). The timing
model reads the world as rendered, not the plan that asked for it.
"""

from __future__ import annotations

import base64
import binascii
import email
import email.policy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from serving_stack.names import POOL_LABEL
from tools.rollout.graph import HELM_RELEASE, Resource, StackGraph, lookup
from tools.rollout.rules import Rules
from tools.rollout.volumes import static_volume

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
PULLS_IMAGES = "pulls its images with"
PREWARM_PROGRAM, WAIT_READY = "prewarm.py", "--wait-ready"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_CONFIG_TYPE = "application/node.eks.aws"
CONTAINERD_DIR = "/var/lib/containerd"
Delivery = Literal["plain", "parallel", "ebs-snapshot"]


@dataclass(frozen=True)
class Prerequisite:
    """Something the pods of a workload need; `key` is its resource, or empty when the stack lacks it."""

    key: str
    reason: str
    missing: str = ""
    absent_because: str = "its namespace is created by this stack"


def pod_specs(resource: Resource, rules: Rules) -> list[dict[str, Any]]:
    paths = rules.pod_spec_paths.get(resource.kind, ())
    specs: list[dict[str, Any]] = []
    for path in paths:
        found = lookup(resource.inputs, path)
        specs.extend(s for s in (found if isinstance(found, list) else [found]) if isinstance(s, dict))
    return specs


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in (spec.get("initContainers") or []) + (spec.get("containers") or []) if isinstance(c, dict)]


def images(resource: Resource, rules: Rules) -> list[str]:
    return sorted({str(c["image"]) for spec in pod_specs(resource, rules) for c in containers(spec) if c.get("image")})


def mounted_claims(spec: dict[str, Any]) -> dict[str, bool]:
    """Claim name -> whether this pod only reads it (volume or every mount read-only)."""
    claims: dict[str, bool] = {}
    for volume in spec.get("volumes") or []:
        claim = (volume or {}).get("persistentVolumeClaim")
        if not claim:
            continue
        mounts = [
            m for c in containers(spec) for m in c.get("volumeMounts") or [] if m.get("name") == volume.get("name")
        ]
        read_only = bool(claim.get("readOnly")) or (bool(mounts) and all(m.get("readOnly") for m in mounts))
        name = str(claim.get("claimName", ""))
        claims[name] = claims.get(name, True) and read_only
    return claims


def _named_refs(spec: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(kind, name, how) for every Secret/ConfigMap the pod needs (optional references skipped)."""
    for ref in spec.get("imagePullSecrets") or []:
        yield "Secret", str(ref.get("name", "")), PULLS_IMAGES
    for volume in spec.get("volumes") or []:
        if (secret := volume.get("secret")) and not secret.get("optional"):
            yield "Secret", str(secret.get("secretName", "")), "mounts"
        if (config_map := volume.get("configMap")) and not config_map.get("optional"):
            yield "ConfigMap", str(config_map.get("name", "")), "mounts"
    for container in containers(spec):
        for source in container.get("envFrom") or []:
            for kind, field in (("Secret", "secretRef"), ("ConfigMap", "configMapRef")):
                if (ref := source.get(field)) and not ref.get("optional"):
                    yield kind, str(ref.get("name", "")), "reads env from"
        for env in container.get("env") or []:
            value_from = (env or {}).get("valueFrom") or {}
            for kind, field in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
                if (ref := value_from.get(field)) and not ref.get("optional"):
                    yield kind, str(ref.get("name", "")), "reads env from"


def _required_label_values(spec: dict[str, Any]) -> dict[str, set[str]]:
    """Label key -> allowed values, from nodeSelector and required node affinity (In / single term)."""
    required = {key: {str(value)} for key, value in (spec.get("nodeSelector") or {}).items()}
    terms = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    affinity = lookup(spec, terms) or []
    if len(affinity) == 1:
        for expression in affinity[0].get("matchExpressions") or []:
            if expression.get("operator") == "In":
                required.setdefault(expression["key"], set()).update(str(v) for v in expression.get("values") or [])
    return required


def selected_node_groups(graph: StackGraph, spec: dict[str, Any]) -> list[Resource]:
    """Node groups of the stack whose labels satisfy every constraint they can speak to (at least one)."""
    required = _required_label_values(spec)
    matches = []
    for group in graph.of_type(NODE_GROUP):
        labels = group.inputs.get("labels") or {}
        relevant = {key: values for key, values in required.items() if key in labels}
        if relevant and all(str(labels[key]) in values for key, values in relevant.items()):
            matches.append(group)
    return matches


def node_groups_of(graph: StackGraph, resource: Resource, rules: Rules) -> list[Resource]:
    """The stack's node groups the workload's pods select, in pod spec order."""
    found = [g for spec in pod_specs(resource, rules) for g in selected_node_groups(graph, spec)]
    return list({g.key: g for g in found}.values())


def gpu_node_groups(graph: StackGraph, rules: Rules) -> list[Resource]:
    return [g for g in graph.of_type(NODE_GROUP) if g.inputs.get("amiType") in rules.gpu_ami_types]


def pool_name(group: Resource) -> str:
    labels = group.inputs.get("labels") or {}
    return str(labels.get(POOL_LABEL) or group.name.removeprefix("pool-").removesuffix("-node-group"))


def _requested_resources(spec: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for container in containers(spec):
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            names.update((resources.get(section) or {}).keys())
    return names


def _commands(spec: dict[str, Any], init: bool) -> list[str]:
    listed = spec.get("initContainers") if init else spec.get("containers")
    return [" ".join(str(a) for a in (c.get("command") or []) + (c.get("args") or [])) for c in listed or []]


# The prerequisites a gated worker waits for in its init container, after its pod has started and pulled its
# image (serving_stack.plan.model_cache.gate_workers): the download markers and the node's prewarm.
PREWARM_REASON = "waits for its node's prewarm"
DOWNLOAD_REASON = "waits in its init container for the download marker"


def waits_for_prewarm(resource: Resource, rules: Rules) -> bool:
    """Whether the workload's pods wait for their node's prewarm: an init container running the prewarm
    program with `--wait-ready` (serving_stack.plan.model_cache.gate_workers)."""
    return any(
        PREWARM_PROGRAM in command and WAIT_READY in command
        for spec in pod_specs(resource, rules)
        for command in _commands(spec, init=True)
    )


def prewarm_daemon_sets(graph: StackGraph, resource: Resource, rules: Rules) -> list[Resource]:
    """The prewarm DaemonSets of the stack on the nodes the workload's pods select."""
    groups = {g.key for g in node_groups_of(graph, resource, rules)}
    return [
        daemon_set
        for daemon_set in graph.kubernetes_objects("DaemonSet")
        if any(PREWARM_PROGRAM in c for spec in pod_specs(daemon_set, rules) for c in _commands(spec, init=False))
        and groups & {g.key for g in node_groups_of(graph, daemon_set, rules)}
    ]


# A DaemonSet on the workload's nodes that pulls its images from each node's registration: the workload's own
# pull becomes a cache hit once that DaemonSet's pod has pulled them.
PREPULL_REASON = "finds its images pulled by"


def prepull_daemon_sets(graph: StackGraph, resource: Resource, rules: Rules) -> list[Resource]:
    """DaemonSets of the stack on nodes the workload's pods select whose pods hold every image it runs."""
    groups, wanted = {g.key for g in node_groups_of(graph, resource, rules)}, set(images(resource, rules))
    return [
        daemon_set
        for daemon_set in graph.kubernetes_objects("DaemonSet")
        if wanted
        and wanted <= set(images(daemon_set, rules))
        and groups & {g.key for g in node_groups_of(graph, daemon_set, rules)}
    ]


def helm_release_of(graph: StackGraph, chart: str) -> Resource | None:
    return next((r for r in graph.of_type(HELM_RELEASE) if chart in str(r.inputs.get("chart", ""))), None)


def claim_writers(graph: StackGraph, rules: Rules, claim: str, namespace: str) -> list[Resource]:
    """Jobs of the stack that mount this claim writable: they fill it."""
    return [
        job
        for job in graph.kubernetes_objects("Job")
        if job.namespace == namespace
        and any(not mounted_claims(spec).get(claim, True) for spec in pod_specs(job, rules))
    ]


def _volume_prerequisite(graph: StackGraph, claim: Resource, need: Callable[..., None]) -> None:
    """A claim bound to a volume of the stack waits for it; one naming a volume on a cluster the stack creates
    that the stack does not create waits forever."""
    volume = static_volume(graph, claim)
    if volume is not None:
        need(volume.key, f"binds to PersistentVolume {volume.object_name}")
    elif (name := lookup(claim.inputs, "spec.volumeName")) and graph.kubernetes_cluster_in_stack(claim):
        because = "its cluster is created by this stack"
        need("", f"binds to PersistentVolume {name}", f"PersistentVolume {name}", because)


def prerequisites(graph: StackGraph, resource: Resource, rules: Rules) -> list[Prerequisite]:
    """Everything the pods of `resource` need before they can be Ready, deduplicated by resource."""
    found: dict[tuple[str, str], Prerequisite] = {}
    namespace = resource.namespace
    namespace_in_stack = graph.find_object("Namespace", namespace) is not None

    def need(key: str, reason: str, missing: str = "", *because: str) -> None:
        if key != resource.key:
            found.setdefault((key, missing), Prerequisite(key, reason, missing, *because))

    for spec in pod_specs(resource, rules):
        for claim, read_only in mounted_claims(spec).items():
            pvc = graph.find_object("PersistentVolumeClaim", claim, namespace)
            if pvc:
                need(pvc.key, f"mounts claim {claim}")
            elif namespace_in_stack:
                need("", f"mounts claim {claim}", f"PersistentVolumeClaim {namespace}/{claim}")
            if read_only:
                for writer in claim_writers(graph, rules, claim, namespace):
                    need(writer.key, f"reads claim {claim}, which Job {writer.object_name} fills")
        for kind, name, how in _named_refs(spec):
            target = graph.find_object(kind, name, namespace)
            if target:
                need(target.key, f"{how} {kind} {name}")
            elif namespace_in_stack:
                need("", f"{how} {kind} {name}", f"{kind} {namespace}/{name}")
        priority = spec.get("priorityClassName")
        if priority and (target := graph.find_object("PriorityClass", str(priority))):
            need(target.key, f"runs at PriorityClass {priority}")
        for group in selected_node_groups(graph, spec):
            need(group.key, f"schedules onto node group {group.inputs.get('nodeGroupName') or group.name}")
        for requested in sorted(_requested_resources(spec)):
            plugin = rules.extended_resources.get(requested)
            if plugin and (release := helm_release_of(graph, plugin["chart"])):
                need(release.key, f"requests {requested}, advertised by {plugin['chart']}")
    if resource.kind == "PersistentVolumeClaim":
        _volume_prerequisite(graph, resource, need)
    if waits_for_prewarm(resource, rules):
        for daemon_set in prewarm_daemon_sets(graph, resource, rules):
            need(daemon_set.key, f"{PREWARM_REASON} (DaemonSet {daemon_set.object_name})")
        for claim in {c for spec in pod_specs(resource, rules) for c in mounted_claims(spec)}:
            for writer in claim_writers(graph, rules, claim, namespace):
                need(writer.key, f"{DOWNLOAD_REASON} (Job {writer.object_name})")
    if resource.kind in rules.operators:
        for daemon_set in prepull_daemon_sets(graph, resource, rules):
            need(daemon_set.key, f"{PREPULL_REASON} DaemonSet {daemon_set.object_name}")
    operator = rules.operators.get(resource.kind)
    if operator and (release := helm_release_of(graph, operator["chart"])):
        need(release.key, f"is reconciled into pods by {operator['chart']}")
    return list(found.values())


def launch_template(graph: StackGraph, group: Resource) -> Resource | None:
    template_id = lookup(group.inputs, "launchTemplate.id")
    return next((t for t in graph.of_type(LAUNCH_TEMPLATE) if f"{t.name}-id" == template_id), None)


def user_data_parts(template: Resource) -> list[tuple[str, str]]:
    """(content type, text) of each part of the template's MIME user data ([] without user data)."""
    encoded = template.inputs.get("userData")
    if not encoded:
        return []
    try:
        text = base64.b64decode(str(encoded), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return []
    message = email.message_from_string(text, policy=email.policy.default)
    parts = message.iter_parts() if message.is_multipart() else [message]
    return [(part.get_content_type(), str(part.get_payload())) for part in parts]


def node_configs(template: Resource) -> list[dict[str, Any]]:
    """The nodeadm NodeConfig documents of the template's user data."""
    found = []
    for content_type, text in user_data_parts(template):
        if content_type == NODE_CONFIG_TYPE:
            found += [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == "NodeConfig"]
    return found


def image_delivery(graph: StackGraph, group: Resource | None) -> Delivery:
    """How the group's nodes get an image: from an EBS-snapshot data volume mounted as containerd's store,
    by parallel pull (nodeadm FastImagePull), or by a plain pull."""
    template = launch_template(graph, group) if group is not None else None
    if template is None:
        return "plain"
    snapshot_volume = any(
        lookup(mapping, "ebs.snapshotId") for mapping in template.inputs.get("blockDeviceMappings") or []
    )
    scripts = [text for content_type, text in user_data_parts(template) if content_type == "text/x-shellscript"]
    if snapshot_volume and any(CONTAINERD_DIR in script for script in scripts):
        return "ebs-snapshot"
    gates = [lookup(config, "spec.featureGates") or {} for config in node_configs(template)]
    return "parallel" if any(g.get("FastImagePull") is True for g in gates) else "plain"
