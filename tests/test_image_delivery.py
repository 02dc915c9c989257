"""How a GPU pool's nodes get the serving image: the AMI type's fastest delivery from the data (SOCI parallel
pull through nodeadm's FastImagePull feature gate on AL2023), or an image-cache volume from an EBS snapshot of
containerd's store mounted before nodeadm starts containerd. The NodeConfig validates against nodeadm's own
CRD (schemas/crds/node.eks.aws_nodeconfigs.yaml), and the timing model reads the delivery back from the
launch template."""

from __future__ import annotations

import base64
import dataclasses
import email
import email.policy

import pytest
import yaml
from aws_helpers import eks_config, node_pool, resolved, run_gpu_pool, the
from crd_schemas import errors
from plan_helpers import plan_of

from serving_stack.config import ConfigError
from serving_stack.facts.aws import load_aws_catalog
from tools.rollout.graph import Resource, StackGraph
from tools.rollout.workloads import image_delivery

TEMPLATE, NODE_GROUP = "aws:ec2/launchTemplate:LaunchTemplate", "aws:eks/nodeGroup:NodeGroup"
SNAPSHOT = "snap-0123456789abcdef0"
# nodeadm's Feature enum (awslabs/amazon-eks-ami nodeadm/doc/api.md @81fec2e): the CRD types featureGates as a
# free map, so the gate names are checked against the documented enum.
NODEADM_FEATURES = {"InstanceIdNodeName", "FastImagePull"}


def _parts(template: dict) -> list[tuple[str, str]]:
    message = email.message_from_string(base64.b64decode(template["userData"]).decode(), policy=email.policy.default)
    return [(part.get_content_type(), str(part.get_payload())) for part in message.iter_parts()]


def _node_config(template: dict) -> dict:
    (config,) = [yaml.safe_load(text) for kind, text in _parts(template) if kind == "application/node.eks.aws"]
    return config


def _pool(instance_type: str, **fields):
    return run_gpu_pool(resolved(instance_type, **fields))


def _graph(run) -> tuple[StackGraph, Resource]:
    graph = StackGraph([r.to_json() for r in run.resources])
    (group,) = graph.of_type(NODE_GROUP)
    return graph, group


@pytest.mark.parametrize("instance_type", sorted(load_aws_catalog().instance_types))
def test_every_gpu_type_gets_its_ami_types_fastest_pull(instance_type):
    catalog = load_aws_catalog()
    run = _pool(instance_type)
    template = the(run, TEMPLATE)
    config = _node_config(template)
    assert errors(config) == []
    gates = config["spec"].get("featureGates", {})
    assert set(gates) <= NODEADM_FEATURES
    fast = catalog.platform.imageDelivery[catalog.instance_types[instance_type].amiType].fastImagePull
    assert gates.get("FastImagePull", False) is fast
    assert image_delivery(*_graph(run)) == ("parallel" if fast else "plain")
    if catalog.instance_types[instance_type].nvmeDisks:
        assert config["spec"]["instance"]["localStorage"] == {"strategy": "RAID0"}


def test_an_image_cache_snapshot_is_mounted_as_containerds_store_instead_of_pulling():
    run = _pool("p5en.48xlarge", imageCacheSnapshotId=SNAPSHOT)
    template = the(run, TEMPLATE)
    config = _node_config(template)
    assert errors(config) == []
    assert "featureGates" not in config["spec"]  # the SOCI snapshotter would not see the cached images
    assert config["spec"]["instance"]["localStorage"] == {"strategy": "RAID0", "disabledMounts": ["Containerd"]}
    (script,) = [text for kind, text in _parts(template) if kind == "text/x-shellscript"]
    assert "mount /var/lib/containerd" in script and "/dev/xvdb /var/lib/containerd" in script
    volumes = {m["deviceName"]: m["ebs"] for m in template["blockDeviceMappings"]}
    assert volumes["/dev/xvdb"]["snapshotId"] == SNAPSHOT and volumes["/dev/xvdb"]["encrypted"] == "true"
    assert image_delivery(*_graph(run)) == "ebs-snapshot"


def test_without_an_instance_store_parallel_pull_gets_the_root_volume_throughput_nodeadm_asks_for():
    """nodeadm/doc/examples.md: at least 600 MiB/s for FastImagePull, up to 1000 MiB/s and 16k IOPS."""
    pool = dataclasses.replace(resolved("p5en.48xlarge"), nvme_disks=0)
    root = the(run_gpu_pool(pool), TEMPLATE)["blockDeviceMappings"][0]["ebs"]
    assert (root["throughput"], root["iops"]) == (1000, 16000)
    raided = the(_pool("p5en.48xlarge"), TEMPLATE)["blockDeviceMappings"][0]["ebs"]
    assert "throughput" not in raided  # containerd pulls onto the RAID0 array


def test_the_plan_turns_fast_pull_off_where_a_snapshot_delivers_the_image():
    (cached,) = _planned_pools(imageCacheSnapshotId=SNAPSHOT)
    (pulled,) = _planned_pools()
    assert (cached.fast_image_pull, cached.image_cache_snapshot_id) == (False, SNAPSHOT)
    assert (pulled.fast_image_pull, pulled.image_cache_snapshot_id) == (True, None)


def _planned_pools(**fields):
    return plan_of(eks_config([node_pool("pool", "p5en.48xlarge", **fields)], [])).pools


@pytest.mark.parametrize(
    "fields", [{"managed": False, "imageCacheSnapshotId": SNAPSHOT}, {"imageCacheSnapshotId": "snap-1"}]
)
def test_a_snapshot_on_a_pool_the_stack_does_not_manage_or_a_bad_id_names_the_key(fields):
    with pytest.raises(ConfigError, match=r"^aws\.nodePools\[0\]\.imageCacheSnapshotId: "):
        _planned_pools(**fields)
