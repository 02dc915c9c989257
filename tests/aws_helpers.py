"""Build AWS components directly under Pulumi mocks (preview=False) and record every registration, the
same way `tools.mock_runtime.run_program` runs the whole program; plus small pool/config factories."""
from __future__ import annotations

from typing import Any, Callable

from serving_stack import pulumi_private
from tools.mock_runtime import ProgramRun, RecordingMonitor, StackMocks, _resolve, plain_numbers
from serving_stack.plan.pools import ManagedPoolSpec, ResolvedPool

PROJECT = "nemotron-lightning"


def run_components(build: Callable[[], dict[str, Any] | None]) -> ProgramRun:
    """Run `build` (which creates components and may return values to resolve) under mocks."""
    stack_mocks = StackMocks()
    monitor = RecordingMonitor(stack_mocks)
    returned: dict[str, Any] = {}

    def program() -> None:
        returned.update(build() or {})

    pulumi_private.run_with_mocks(program, stack_mocks, monitor, project=PROJECT, stack="test", config={}, secret_keys=[])
    outputs = {key: plain_numbers(_resolve(value)) for key, value in returned.items()}
    return ProgramRun(resources=monitor.recorded, outputs=outputs)


def inputs(run: ProgramRun, type_token: str) -> list[dict[str, Any]]:
    return [plain_numbers(r.inputs) for r in run.of_type(type_token)]


def the(run: ProgramRun, type_token: str) -> dict[str, Any]:
    (only,) = inputs(run, type_token)
    return only


def pool(**overrides: Any) -> ResolvedPool:
    """An on-demand p5en.48xlarge EFA pool in us-east-1a unless told otherwise."""
    fields: dict[str, Any] = dict(
        name="h200", managed=True, gpu="h200", gpu_product="NVIDIA-H200", gpus_per_node=8, arch="x86_64",
        fabric="efa", efa_interfaces=16, min_size=0, desired_size=1, max_size=2, capacity_type="on-demand",
        instance_type="p5en.48xlarge", ami_type="AL2023_x86_64_NVIDIA", availability_zone="us-east-1a",
        nvme_disks=8, on_demand_usd_per_hour=63.296,
    )
    fields.update(overrides)
    return ResolvedPool(**fields)


CLUSTER = {"create": {"name": "nemotron", "kubernetesVersion": "1.33", "availabilityZones": ["us-east-1a", "us-east-1b"],
                      "endpointPublicAccessCidrs": ["203.0.113.0/24"]}}


def eks_config(node_pools: list[dict[str, Any]], targets: list[dict[str, Any]], **aws_block: Any) -> dict[str, Any]:
    """Raw stack config (as in `Pulumi.<stack>.yaml`) for a stack that creates its EKS cluster."""
    return {
        "kubernetes": {"namespace": "nemotron-test", "cluster": {"source": "eks"}},
        "modelCache": {"storageClassName": "fsx-lustre", "size": "1200Gi"},
        "targets": targets,
        "aws": {"region": "us-east-1", "cluster": CLUSTER, "nodePools": node_pools, **aws_block},
    }


def node_pool(name: str, instance_type: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "instanceType": instance_type, "availabilityZone": "us-east-1a", "desiredSize": 1, "maxSize": 2, **fields}


def resolved(instance_type: str, **fields: Any) -> ResolvedPool:
    """The pool of this instance type exactly as the config path resolves it."""
    from plan_helpers import plan_of

    (only,) = plan_of(eks_config([node_pool("pool", instance_type, **fields)], [])).pools
    return only


def managed(instance_type: str, **fields: Any) -> ManagedPoolSpec:
    """The node-group spec of this instance type's pool, as the plan builds it."""
    return ManagedPoolSpec.of(resolved(instance_type, **fields))
