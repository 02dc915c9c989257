"""Config blocks for the AWS side of the stack (network, EKS cluster, GPU node pools, model-cache storage)
(shapes and ranges; the checks against the instance facts and the zone data run in the plan,
`serving_stack.plan.stack`, `serving_stack.plan.pools` and `serving_stack.plan.pools`).

Under `aws.cluster`, `create` makes the stack build the VPC and the EKS cluster (then
`kubernetes.cluster.source` must be `eks`); `existing` names a cluster and its private subnets so that
the stack can add managed GPU node groups to it. Pools with `managed: false` only describe nodes that
already exist (placement facts): they must carry the node labels of `ResolvedPool.node_labels`
(`serving_stack.plan.pools`).
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

import pydantic

from serving_stack.config.types import (
    AsciiText,
    AvailabilityZone,
    AwsTags,
    Block,
    Cidr,
    DnsLabel,
    Fabric,
    InstanceType,
    Int32,
    KubernetesVersion,
    NetworkCidr,
    Region,
    ReservationId,
    SecurityGroupId,
    SnapshotId,
    SubnetId,
    VpcId,
    matching,
)
from serving_stack.names import CapacityType


class AccessEntry(Block):
    """An IAM principal allowed into the cluster (EKS access entry with an AWS-managed access policy),
    beside the identity that creates it: CI roles, operators."""

    principalArn: Annotated[
        str,
        matching(
            r"arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+",
            "an IAM role or user ARN (arn:aws:iam::<12-digit account>:role/<name>)",
        ),
    ]
    accessPolicy: Literal["ClusterAdmin", "Admin", "Edit", "View"] = "View"
    namespaces: list[DnsLabel] = pydantic.Field(default_factory=list, description="[]: the whole cluster")


class CreateCluster(Block):
    name: DnsLabel
    kubernetesVersion: KubernetesVersion
    availabilityZones: list[AvailabilityZone] = pydantic.Field(min_length=2, max_length=3)
    vpcCidr: NetworkCidr = "10.0.0.0/16"
    endpointPublicAccessCidrs: list[Cidr] = pydantic.Field(
        default_factory=list, description="[]: private endpoint only"
    )
    controlPlaneLogRetentionDays: Literal[7, 14, 30, 60, 90, 180, 365] = 90
    natGatewayPerAz: bool = True
    accessEntries: list[AccessEntry] = pydantic.Field(default_factory=list)


# EKS CreateCluster `name`: 1-100 characters, pattern ^[0-9A-Za-z][A-Za-z0-9\-_]*$ (EKS API Reference).
EksClusterName = Annotated[
    str,
    matching(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}", "an EKS cluster name: letters, digits, '-' and '_', at most 100"),
]


class ExistingCluster(Block):
    name: EksClusterName
    kubernetesVersion: Optional[KubernetesVersion] = None
    vpcId: VpcId
    privateSubnetIds: dict[AvailabilityZone, SubnetId] = pydantic.Field(min_length=1)
    nodeSecurityGroupIds: list[SecurityGroupId] = pydantic.Field(min_length=1, description="the cluster security group")


class AwsClusterConfig(Block):
    create: Optional[CreateCluster] = None
    existing: Optional[ExistingCluster] = None

    @pydantic.model_validator(mode="after")
    def _exactly_one(self) -> AwsClusterConfig:
        if (self.create is None) == (self.existing is None):
            raise ValueError("set exactly one of create, existing")
        return self


# EKS NodegroupScalingConfig sizes are int32s; the "Nodes per managed node group" service quota (450 by
# default) is adjustable per account, so the config bounds them by the API's int32 and leaves the quota to EKS.
NODE_COUNT = "nodes; at most 2^31-1 (EKS API int32; the adjustable EKS quota, 450 by default, is EKS's to check)"


class SystemNodeGroupConfig(Block):
    """CPU nodes for the platform pods (Dynamo operator, CoreDNS, CSI controllers, NFD master)."""

    instanceTypes: list[InstanceType] = pydantic.Field(
        default_factory=lambda: ["m7i.2xlarge"],
        min_length=1,
        max_length=20,
        description="EKS CreateNodegroup takes 0-20 instance types",
    )
    minSize: Int32 = pydantic.Field(default=2, ge=1, description=NODE_COUNT)
    desiredSize: Int32 = pydantic.Field(default=2, ge=1, description=NODE_COUNT)
    maxSize: Int32 = pydantic.Field(default=4, ge=1, description=NODE_COUNT)
    diskSizeGiB: int = pydantic.Field(default=100, ge=20, le=16384, description="EBS gp3: at most 16 TiB")


class NodeFacts(Block):
    """What a node of an unmanaged, non-EC2 pool holds (an on-premises InfiniBand cluster, say)."""

    gpu: AsciiText
    gpus: int = pydantic.Field(gt=0, le=72, description="at most 72: a GB200 NVL72 rack, the largest NVLink domain")
    arch: Literal["x86_64", "arm64"] = "x86_64"


class NodePoolConfig(Block):
    """`capacityType` `odcr` and `capacity-block` launch into the reservation `capacityReservationId` (in the
    pool's zone). `kubernetesVersion`: the version the pool's nodes were last deployed at; when the cluster's
    differs, the node group is upgraded to it, which EKS does for a Capacity Block group only at size 0."""

    name: DnsLabel
    managed: bool = True
    instanceType: Optional[AsciiText] = None
    nodeFacts: Optional[NodeFacts] = None
    gpuProduct: Optional[AsciiText] = pydantic.Field(default=None, description="nvidia.com/gpu.product override")
    availabilityZone: Optional[AvailabilityZone] = None
    subnetId: Optional[SubnetId] = None
    minSize: Int32 = pydantic.Field(default=0, ge=0, description=NODE_COUNT)
    desiredSize: Int32 = pydantic.Field(ge=0, description=NODE_COUNT)
    maxSize: Int32 = pydantic.Field(ge=1, description=NODE_COUNT)
    capacityType: CapacityType = "on-demand"
    capacityReservationId: Optional[ReservationId] = None
    kubernetesVersion: Optional[KubernetesVersion] = pydantic.Field(
        default=None, description="the version the nodes run now (required for capacity-block pools)"
    )
    fabric: Optional[Fabric] = pydantic.Field(default=None, description="default: efa on EFA-capable types, else none")
    rootVolumeGiB: int = pydantic.Field(default=200, ge=50, le=16384)  # EBS gp3: 1 GiB to 16 TiB
    imageCacheSnapshotId: Optional[SnapshotId] = pydantic.Field(
        default=None,
        description="an EBS snapshot of containerd's image store holding the serving image, mounted at "
        "/var/lib/containerd on every node of the pool instead of pulling (docs/cold-start.md); unset: the "
        "AMI type's fastest pull (catalog/aws_platform.yaml imageDelivery)",
    )


class EfsSettings(Block):
    directoryPerms: Annotated[str, matching(r"[0-7]{3}", "three octal digits such as 700")] = "700"
    basePath: Annotated[str, matching(r"/[A-Za-z0-9/_-]*", "an absolute path of letters, digits, /, _ and -")] = (
        "/nemotron-model-cache"
    )


class FsxSettings(Block):
    perUnitStorageThroughput: Literal[125, 250, 500, 1000] = 250
    availabilityZone: Optional[AvailabilityZone] = None
    fileSystemTypeVersion: Literal["2.15"] = "2.15"
    dataCompressionType: Literal["NONE", "LZ4"] = "LZ4"


class ModelCacheStorageConfig(Block):
    """The RWX StorageClass named `modelCache.storageClassName`; FSx capacity is `modelCache.size`."""

    backend: Literal["efs", "fsx"]
    protect: bool = False
    efs: EfsSettings = EfsSettings()
    fsx: FsxSettings = FsxSettings()


class DevicePluginsConfig(Block):
    """Which device plugins the stack installs (each only where a pool needs it). Turn one off on a cluster
    that already runs it, e.g. through the NVIDIA GPU Operator or Network Operator. `draDriver`: the NVIDIA
    DRA driver with ComputeDomains, for pools of instance types with multi-node NVLink (P6e-GB200)."""

    nvidia: bool = True
    efa: bool = True
    rdmaSharedDevice: bool = True
    draDriver: bool = True


class AwsConfig(Block):
    region: Region
    cluster: Optional[AwsClusterConfig] = None
    systemNodeGroup: SystemNodeGroupConfig = SystemNodeGroupConfig()
    nodePools: list[NodePoolConfig] = pydantic.Field(default_factory=list)
    devicePlugins: DevicePluginsConfig = DevicePluginsConfig()
    modelCacheStorage: Optional[ModelCacheStorageConfig] = None
    tags: AwsTags = pydantic.Field(default_factory=dict)
