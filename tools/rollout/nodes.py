"""What the render says about a node group's nodes: its launch template, whether they are GPU nodes, and how
they get a container image (the nodeadm NodeConfig in the template's user data: the `FastImagePull` feature
gate turns on SOCI parallel pull; a data volume from an EBS snapshot mounted at /var/lib/containerd holds the
images already). The timing model reads the world as rendered, not the plan that asked for it."""

from __future__ import annotations

import base64
import binascii
import email
import email.policy
from typing import Any, Literal

import yaml

from tools.rollout.graph import Resource, StackGraph, lookup

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_CONFIG_TYPE = "application/node.eks.aws"
CONTAINERD_DIR = "/var/lib/containerd"
Delivery = Literal["plain", "parallel", "ebs-snapshot"]


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
