"""Build AWS components directly under Pulumi mocks (preview=False) and record every registration, the
same way `tools.mock_runtime.run_program` runs the whole program; plus small pool/config factories."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from serving_stack import pulumi_private
from serving_stack.facts.aws import load_aws_catalog
from serving_stack.plan.pools import RESERVED_CAPACITY_TYPES, ResolvedPool
from tools.mock_runtime import ProgramRun, RecordingMonitor, StackMocks, _resolve, plain_numbers

PROJECT = "nemotron-lightning"
REGION = "us-east-1"
RESERVATION = "cr-0123456789abcdef0"
KUBERNETES_VERSION = "1.33"


def run_components(build: Callable[[], dict[str, Any] | None]) -> ProgramRun:
    """Run `build` (which creates components and may return values to resolve) under mocks."""
    stack_mocks = StackMocks()
    monitor = RecordingMonitor(stack_mocks)
    returned: dict[str, Any] = {}

    def program() -> None:
        returned.update(build() or {})

    pulumi_private.run_with_mocks(
        program, stack_mocks, monitor, project=PROJECT, stack="test", config={}, secret_keys=[]
    )
    outputs = {key: plain_numbers(_resolve(value)) for key, value in returned.items()}
    return ProgramRun(resources=monitor.recorded, outputs=outputs)


def run_gpu_pool(spec: ResolvedPool, name: str = "gpu", **args: Any) -> ProgramRun:
    """One `GpuNodePool` under mocks, with a cluster's usual ids; `args` override `GpuNodePoolArgs` fields."""
    defaults: dict[str, Any] = {
        "cluster_name": "nemotron",
        "vpc_id": "vpc-0123456789abcdef0",
        "subnet_id": "subnet-0123456789abcdef0",
        "cluster_security_group_ids": ["sg-0123456789abcdef0"],
        "node_managed_policies": load_aws_catalog().platform.nodeManagedPolicies,
    }

    def build() -> None:
        GpuNodePool(name, GpuNodePoolArgs(pool=spec, **{**defaults, **args}))

    return run_components(build)


def inputs(run: ProgramRun, type_token: str) -> list[dict[str, Any]]:
    return [plain_numbers(r.inputs) for r in run.of_type(type_token)]


def the(run: ProgramRun, type_token: str) -> dict[str, Any]:
    (only,) = inputs(run, type_token)
    return only


def pool(**overrides: Any) -> ResolvedPool:
    """An on-demand p5en.48xlarge EFA pool in us-east-1a unless told otherwise."""
    fields: dict[str, Any] = {
        "name": "h200",
        "managed": True,
        "gpu": "h200",
        "gpu_product": "NVIDIA-H200",
        "gpus_per_node": 8,
        "arch": "x86_64",
        "fabric": "efa",
        "efa_interfaces": 16,
        "min_size": 0,
        "desired_size": 1,
        "max_size": 2,
        "capacity_type": "on-demand",
        "instance_type": "p5en.48xlarge",
        "ami_type": "AL2023_x86_64_NVIDIA",
        "availability_zone": "us-east-1a",
        "nvme_disks": 8,
        "on_demand_usd_per_hour": 63.296,
    }
    fields.update(overrides)
    return ResolvedPool(**fields)


CLUSTER = {
    "create": {
        "name": "nemotron",
        "kubernetesVersion": KUBERNETES_VERSION,
        "availabilityZones": ["us-east-1a", "us-east-1b"],
        "endpointPublicAccessCidrs": ["203.0.113.0/24"],
    }
}


def eks_config(node_pools: list[dict[str, Any]], targets: list[dict[str, Any]], **aws_block: Any) -> dict[str, Any]:
    """Raw stack config (as in `Pulumi.<stack>.yaml`) for a stack that creates its EKS cluster."""
    return {
        "kubernetes": {"namespace": "nemotron-test", "cluster": {"source": "eks"}},
        # An FSx for Lustre class of the user's, which mounts on Local Zone nodes too.
        "modelCache": {"storageClassName": "fsx-lustre", "size": "1200Gi", "mountsInLocalZones": True},
        "targets": targets,
        "aws": {"region": REGION, "cluster": CLUSTER, "nodePools": node_pools, **aws_block},
    }


def pool_zone(instance_type: Optional[str]) -> str:
    """A zone the instance type launches in (catalog data): the first cluster AZ, or the first Local Zone of
    its zone groups for a type sold only there."""
    catalog = load_aws_catalog()
    instance = catalog.instance_types.get(instance_type or "")
    if instance is not None and instance.local_zones_only:
        return catalog.regions.local_zones(REGION, instance.localZoneGroups)[0]
    return CLUSTER["create"]["availabilityZones"][0]


def capacity_fields(instance_type: str, capacity_type: Optional[str] = None) -> dict[str, Any]:
    """A capacity type AWS sells the instance type as (the first the catalog lists, unless named), with the
    reservation id a reservation needs and the node version a Capacity Block pool states."""
    capacity = capacity_type or load_aws_catalog().instance_types[instance_type].capacityTypes[0]
    fields: dict[str, Any] = {"capacityType": capacity}
    if capacity in RESERVED_CAPACITY_TYPES:
        fields["capacityReservationId"] = RESERVATION
    if capacity == "capacity-block":
        fields["kubernetesVersion"] = KUBERNETES_VERSION
    return fields


def node_pool(name: str, instance_type: Optional[str], **fields: Any) -> dict[str, Any]:
    """A pool in a zone its instance type launches in (`pool_zone`); capacity fields only as given."""
    return {
        "name": name,
        "instanceType": instance_type,
        "availabilityZone": pool_zone(instance_type),
        "desiredSize": 1,
        "maxSize": 2,
        **fields,
    }


def resolved(instance_type: str, **fields: Any) -> ResolvedPool:
    """The pool of this instance type exactly as the config path resolves it (capacity fields, unless
    given, from `capacity_fields`)."""
    from plan_helpers import plan_of

    fields = {**capacity_fields(instance_type, fields.get("capacityType")), **fields}
    (only,) = plan_of(eks_config([node_pool("pool", instance_type, **fields)], [])).pools
    return only
