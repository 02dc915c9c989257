"""Launch-template settings of the stack's node groups (GPU pools and system nodes).

Every group: EKS's default template would leave IMDSv1 on and the metadata hop limit at 2, so pods could reach
the node role. GPU pools add what gets their serving image onto a new node fastest (docs/cold-start.md): the
nodeadm NodeConfig in the user data (awslabs/amazon-eks-ami nodeadm/doc/api.md) turns on SOCI parallel pull
(`featureGates.FastImagePull`) and lays the instance store out as RAID0 for containerd, or a data volume from
an EBS snapshot of containerd's image store is mounted before nodeadm starts containerd (nodeadm-config runs
before cloud-init, nodeadm-run after its user scripts: templates/al2023/runtime/rootfs/etc/systemd/system).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Optional

import pulumi_aws as aws
import yaml

TAGGED_RESOURCES = ("instance", "volume", "network-interface")
BOUNDARY = "NEMOTRON"
NODE_CONFIG = "application/node.eks.aws"
IMAGE_CACHE_DEVICE = "/dev/xvdb"  # AL2023's udev rules link an EBS NVMe device to its mapping name
CONTAINERD_DIR = "/var/lib/containerd"
# gp3 throughput and IOPS for image pulls onto EBS: nodeadm's recommendation for FastImagePull ("at least
# 600MiB/s ... up to 1000MiB/s and 16k IOPs", nodeadm/doc/examples.md), and for reading a cached image store.
IMAGE_IO = {"throughput": 1000, "iops": 16000}


def metadata_options() -> aws.ec2.LaunchTemplateMetadataOptionsArgs:
    """IMDSv2 only, hop limit 1: pods (one hop further) cannot read the node's credentials. The node daemons
    that use IMDS (VPC CNI, EFA and CSI node plugins) run on the host network; workloads use Pod Identity."""
    return aws.ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1
    )


def root_volume(size_gib: int, image_io: bool = False) -> aws.ec2.LaunchTemplateBlockDeviceMappingArgs:
    """The AL2023 root volume: encrypted gp3 (with a launch template the node group's diskSize is not allowed).
    `image_io`: containerd pulls onto it in parallel (no instance store): the throughput parallel pull needs."""
    return _gp3("/dev/xvda", volume_size=size_gib, **(IMAGE_IO if image_io else {}))


def image_cache_volume(snapshot_id: str) -> aws.ec2.LaunchTemplateBlockDeviceMappingArgs:
    """A gp3 volume from the snapshot of containerd's image store (its size is the snapshot's). Fast snapshot
    restore on the snapshot in the pool's zone avoids the lazy first read (docs/cold-start.md)."""
    return _gp3(IMAGE_CACHE_DEVICE, snapshot_id=snapshot_id, **IMAGE_IO)


def _gp3(device_name: str, **ebs: Any) -> aws.ec2.LaunchTemplateBlockDeviceMappingArgs:
    settings = aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
        volume_type="gp3", encrypted="true", delete_on_termination="true", **ebs
    )
    return aws.ec2.LaunchTemplateBlockDeviceMappingArgs(device_name=device_name, ebs=settings)


def node_config(nvme_raid0: bool, fast_image_pull: bool, image_cache: bool) -> Optional[dict[str, Any]]:
    """The NodeConfig nodeadm merges into its own (None when there is nothing to change)."""
    spec: dict[str, Any] = {}
    if nvme_raid0:
        storage: dict[str, Any] = {"strategy": "RAID0"}
        if image_cache:  # containerd's store is the image-cache volume, not the array
            storage["disabledMounts"] = ["Containerd"]
        spec["instance"] = {"localStorage": storage}
    if fast_image_pull:
        spec["featureGates"] = {"FastImagePull": True}
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec} if spec else None


def _mount_image_cache() -> str:
    return "\n".join(
        (
            "#!/bin/bash",
            "# containerd's image store from the image-cache volume; nodeadm starts containerd after this script.",
            "set -euo pipefail",
            f"mkdir -p {CONTAINERD_DIR}",
            f'echo "{IMAGE_CACHE_DEVICE} {CONTAINERD_DIR} auto defaults,noatime,nofail 0 2" >> /etc/fstab',
            f"mount {CONTAINERD_DIR}",
        )
    )


def user_data(nvme_raid0: bool, fast_image_pull: bool, image_cache: bool) -> Optional[str]:
    """The launch template's user data (base64 MIME multipart), None when nodeadm's defaults are enough."""
    parts: list[tuple[str, str]] = []
    config = node_config(nvme_raid0, fast_image_pull, image_cache)
    if config is not None:
        parts.append((NODE_CONFIG, "---\n" + yaml.safe_dump(config, sort_keys=False)))
    if image_cache:
        parts.append(("text/x-shellscript", _mount_image_cache()))
    if not parts:
        return None
    body = "".join(f"--{BOUNDARY}\nContent-Type: {kind}\n\n{text.rstrip()}\n\n" for kind, text in parts)
    mime = f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{BOUNDARY}"\n\n{body}--{BOUNDARY}--\n'
    return base64.b64encode(mime.encode()).decode()


def tag_specifications(tags: Mapping[str, str], name: str) -> list[aws.ec2.LaunchTemplateTagSpecificationArgs]:
    """The group's tags on its instances, volumes and network interfaces (cost allocation, ownership)."""
    named = {**tags, "Name": name}
    return [aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=named) for kind in TAGGED_RESOURCES]
