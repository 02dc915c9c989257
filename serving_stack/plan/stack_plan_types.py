"""The stack plan's types: the one immutable value `build_plan` returns and the parts it is made of.

Plain frozen dataclasses, no logic beyond `StackPlan.endpoints`; `stack_plan.build_plan` fills them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Union

from serving_stack.contract.outputs import ServingEndpoint
from serving_stack.facts.aws_platform import DevicePluginPins, EksAddon
from serving_stack.plan.costs import PoolCostRow
from serving_stack.plan.dra import DraDriverPlan
from serving_stack.plan.gateway_stack import StackGateway
from serving_stack.plan.monitoring import MonitoringPlan
from serving_stack.plan.operability import OperabilityPlan
from serving_stack.plan.pools import LocalZoneSubnet, ManagedPoolSpec, ResolvedPool
from serving_stack.plan.prewarm import PrewarmPool, PrewarmSettings
from serving_stack.plan.sagemaker_spec import PlannedEndpoint
from serving_stack.plan.serving import PlannedTarget
from serving_stack.plan.stack_capacity import StackCapacity
from serving_stack.plan.storage import StoragePlan


@dataclass(frozen=True)
class SystemNodes:
    instance_types: tuple[str, ...]
    min_size: int
    desired_size: int
    max_size: int
    disk_size_gib: int


@dataclass(frozen=True)
class AccessGrant:
    principal_arn: str
    policy: str
    namespaces: tuple[str, ...]


@dataclass(frozen=True)
class CreatedCluster:
    """A VPC and an EKS cluster the stack builds; Kubernetes resources go to it."""

    name: str
    kubernetes_version: str
    availability_zones: tuple[str, ...]
    vpc_cidr: str
    nat_gateway_per_az: bool
    endpoint_public_access_cidrs: tuple[str, ...]
    log_retention_days: int
    system_nodes: SystemNodes
    addons: tuple[EksAddon, ...]
    access_grants: tuple[AccessGrant, ...]
    local_zone_subnets: tuple[LocalZoneSubnet, ...] = ()


@dataclass(frozen=True)
class ExistingEks:
    """The AWS side of an existing cluster, for the GPU node groups the stack adds to it."""

    name: str
    vpc_id: str
    private_subnet_ids_by_az: Mapping[str, str]
    node_security_group_ids: tuple[str, ...]


@dataclass(frozen=True)
class KubeconfigCluster:
    """An existing cluster reached through an explicit kubeconfig context (never the ambient default)."""

    context: Optional[str]
    kubeconfig_path: Optional[str]
    eks: Optional[ExistingEks]


ClusterPlan = Union[CreatedCluster, KubeconfigCluster]


@dataclass(frozen=True)
class AwsAccount:
    region: str
    tags: Mapping[str, str]
    node_managed_policies: tuple[str, ...]


@dataclass(frozen=True)
class DevicePluginSet:
    """Which device plugins the pools need, each an explicit switch."""

    pins: DevicePluginPins  # the charts, pinned
    nvidia: bool  # the NVIDIA device plugin (off where the GPU Operator runs one)
    efa: bool  # the EFA device plugin, on the instance types below
    efa_instance_types: tuple[str, ...]  # the instance types of the EFA pools
    infiniband: bool  # the RDMA shared device plugin: some pool's fabric is InfiniBand
    dra_driver: Optional[DraDriverPlan] = None  # the NVIDIA DRA driver, for multi-node NVLink pools


@dataclass(frozen=True)
class PullSecretPlan:
    name: str
    server: str


@dataclass(frozen=True)
class DynamoPlatformPlan:
    """`install` False: the cluster already runs the platform (shared clusters); the stack leaves it alone."""

    install: bool
    namespace: str
    release_name: str
    chart_url: str
    values: Mapping[str, Any]


@dataclass(frozen=True)
class ServingPlan:
    """`hf_token`: the stack sets `hfToken` (a token Secret for the download Job); `retain_on_delete`: destroy
    forgets the namespace and the claim instead of deleting them."""

    namespace: str
    hf_token: bool
    pull_secret: Optional[PullSecretPlan]
    model_cache_claim: dict[str, Any]
    download_jobs: tuple[dict[str, Any], ...]
    retain_on_delete: bool
    prewarm_settings: PrewarmSettings
    prewarm_pools: tuple[PrewarmPool, ...]
    platform: DynamoPlatformPlan
    targets: tuple[PlannedTarget, ...]


@dataclass(frozen=True)
class StackPlan:
    aws: Optional[AwsAccount]
    cluster: ClusterPlan
    pools: tuple[ResolvedPool, ...]
    managed_pools: tuple[ManagedPoolSpec, ...]
    device_plugins: Optional[DevicePluginSet]
    storage: Optional[StoragePlan]
    serving: ServingPlan
    sagemaker: tuple[PlannedEndpoint, ...]
    pool_costs: tuple[PoolCostRow, ...]
    monitoring: Optional[MonitoringPlan]
    operability: Optional[OperabilityPlan]
    capacity: StackCapacity
    gateway: Optional[StackGateway] = None

    @property
    def endpoints(self) -> list[ServingEndpoint]:
        return [t.endpoint for t in self.serving.targets] + [e.endpoint for e in self.sagemaker]
