"""Config blocks for the AWS side of the stack (network, EKS cluster, GPU node pools, model-cache storage): shapes
and ranges; the checks against the instance facts and the zone data run in the plan (`plan.cluster`, `plan.pools`).
Pools with `managed: false` only describe existing nodes, which carry the labels of `ResolvedPool.node_labels`.
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
    aws_arn,
    matching,
)
from serving_stack.names import CapacityType


class AccessEntry(Block):
    """An IAM principal allowed into the cluster (EKS access entry with an AWS-managed access policy),
    beside the identity that creates it: CI roles, operators."""

    principalArn: Annotated[str, aws_arn("iam")]
    """The IAM role or user to let in (EKS CreateAccessEntry `principalArn`); one entry per principal."""
    accessPolicy: Literal["ClusterAdmin", "Admin", "Edit", "View"] = "View"
    """The AWS-managed access policy associated with it (EKS access policies: `AmazonEKSClusterAdminPolicy`,
    `AmazonEKSAdminPolicy`, `AmazonEKSEditPolicy`, `AmazonEKSViewPolicy`); default View, read-only."""
    namespaces: list[DnsLabel] = pydantic.Field(default_factory=list, description="[]: the whole cluster")


class CreateCluster(Block):
    name: DnsLabel
    """The EKS cluster's name, also the name of its VPC (a DNS label)."""
    kubernetesVersion: KubernetesVersion
    """The control plane's Kubernetes version (EKS `version`, e.g. `1.33`); at least the Dynamo platform chart's minimum
    (catalog data), and what the GPU node groups follow."""
    availabilityZones: list[AvailabilityZone] = pydantic.Field(min_length=2, max_length=3)
    """The 2-3 Availability Zones of the VPC's subnets (EKS needs subnets in two zones); every managed GPU pool outside
    a Local Zone is in one of them."""
    vpcCidr: NetworkCidr = "10.0.0.0/16"
    """The VPC's IPv4 range, a /16 to /20 network (Amazon VPC sizes); a private subnet per zone takes a quarter of it,
    the public and Local Zone subnets share the last quarter."""
    endpointPublicAccessCidrs: list[Cidr] = pydantic.Field(
        default_factory=list, description="[]: private endpoint only"
    )
    controlPlaneLogRetentionDays: Literal[7, 14, 30, 60, 90, 180, 365] = 90
    """Days CloudWatch Logs keeps the control-plane logs (all five EKS log types; CloudWatch `retentionInDays`)."""
    natGatewayPerAz: bool = True
    """One NAT gateway per zone, so that a zone's outage leaves the others' egress (AWS's recommendation); false: one
    shared NAT gateway, cheaper."""
    accessEntries: list[AccessEntry] = pydantic.Field(default_factory=list)
    """IAM principals besides the creator allowed into the cluster (EKS access entries); `[]`: only the identity that
    runs `pulumi up`."""


# EKS CreateCluster `name`: 1-100 characters, pattern ^[0-9A-Za-z][A-Za-z0-9\-_]*$ (EKS API Reference).
EksClusterName = Annotated[
    str,
    matching(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}", "an EKS cluster name: letters, digits, '-' and '_', at most 100"),
]


class ExistingCluster(Block):
    name: EksClusterName
    """The EKS cluster the stack adds GPU node groups to (EKS cluster name, 1-100 characters)."""
    kubernetesVersion: Optional[KubernetesVersion] = None
    """The version the cluster runs (EKS `version`); unset: not checked against the Dynamo platform's minimum, and
    pools' node groups take the cluster's."""
    vpcId: VpcId
    """The cluster's VPC (`vpc-...`): where Local Zone subnets and the node security groups belong."""
    privateSubnetIds: dict[AvailabilityZone, SubnetId] = pydantic.Field(min_length=1)
    """Availability Zone -> private subnet of the cluster (`subnet-...`): a managed pool in that zone launches there
    unless it names its own `subnetId`."""
    nodeSecurityGroupIds: list[SecurityGroupId] = pydantic.Field(min_length=1, description="the cluster security group")


class AwsClusterConfig(Block):
    create: Optional[CreateCluster] = None
    """Build a VPC and an EKS cluster (then `kubernetes.cluster.source` must be `eks`); exactly one of create,
    existing."""
    existing: Optional[ExistingCluster] = None
    """Use an existing EKS cluster and its private subnets for the GPU node groups; exactly one of create, existing."""

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
    """The GPU model of each node, a key of the catalog's GPUs (catalog/gpus.yaml `gpus`, e.g. `h100`)."""
    gpus: int = pydantic.Field(gt=0, le=72, description="at most 72: a GB200 NVL72 rack, the largest NVLink domain")
    arch: Literal["x86_64", "arm64"] = "x86_64"
    """The nodes' CPU architecture (`kubernetes.io/arch`), matched against a target's image."""


class NodePoolConfig(Block):
    """`capacityType` `odcr` and `capacity-block` launch into the reservation `capacityReservationId` (in the
    pool's zone). `kubernetesVersion`: the version the pool's nodes were last deployed at; when the cluster's
    differs, the node group is upgraded to it, which EKS does for a Capacity Block group only at size 0."""

    name: DnsLabel
    """The pool's name (a DNS label): the node group's name suffix and the `nemotron.nvidia.com/pool` node label targets
    are placed by."""
    managed: bool = True
    """true: the stack creates an EKS managed node group for the pool; false: the nodes exist already (an existing
    cluster's, or on-premises) and the pool only describes them for placement."""
    instanceType: Optional[AsciiText] = None
    """The EC2 instance type of the nodes, a key of catalog/instance_types.yaml (e.g. `p5.48xlarge`); exactly one of
    instanceType, nodeFacts (a managed pool needs instanceType)."""
    nodeFacts: Optional[NodeFacts] = None
    """What each node holds, for an unmanaged pool of nodes that are not EC2 instances; exactly one of instanceType,
    nodeFacts."""
    gpuProduct: Optional[AsciiText] = pydantic.Field(default=None, description="nvidia.com/gpu.product override")
    availabilityZone: Optional[AvailabilityZone] = None
    """The one zone of a managed pool (an AZ of the cluster, or a Local Zone): the reservation's and the placement
    group's zone; required for managed pools."""
    subnetId: Optional[SubnetId] = None
    """The subnet a managed pool launches in; unset: the existing cluster's `privateSubnetIds` entry for the zone, or
    the subnet the stack makes for a Local Zone (refused with `aws.cluster.create` outside Local Zones)."""
    minSize: Int32 = pydantic.Field(default=0, ge=0, description=NODE_COUNT)
    desiredSize: Int32 = pydantic.Field(ge=0, description=NODE_COUNT)
    maxSize: Int32 = pydantic.Field(ge=1, description=NODE_COUNT)
    capacityType: CapacityType = "on-demand"
    """How the instances are bought: `on-demand`, `spot`, `odcr` (an On-Demand Capacity Reservation) or `capacity-block`
    (EC2 Capacity Blocks for ML); the last two need `capacityReservationId`."""
    capacityReservationId: Optional[ReservationId] = None
    """The reservation (`cr-...`) an `odcr` or `capacity-block` pool launches into, in the pool's zone (EC2 launch
    template `capacityReservationTarget`); refused with other capacity types."""
    kubernetesVersion: Optional[KubernetesVersion] = pydantic.Field(
        default=None, description="the version the nodes run now (required for capacity-block pools)"
    )
    fabric: Optional[Fabric] = pydantic.Field(default=None, description="default: efa on EFA-capable types, else none")
    rootVolumeGiB: int = pydantic.Field(default=200, ge=50, le=16384)  # EBS gp3: 1 GiB to 16 TiB
    """The root EBS gp3 volume of each node, in GiB: the image store and the container logs (EBS gp3: at most 16
    TiB)."""
    imageCacheSnapshotId: Optional[SnapshotId] = pydantic.Field(
        default=None,
        description="an EBS snapshot of containerd's image store holding the serving image, mounted at "
        "/var/lib/containerd on every node of the pool instead of pulling (docs/cold-start.md); unset: the "
        "AMI type's fastest pull (catalog/aws_platform.yaml imageDelivery)",
    )


class EfsSettings(Block):
    directoryPerms: Annotated[str, matching(r"[0-7]{3}", "three octal digits such as 700")] = "700"
    """The POSIX permissions of the directory the EFS CSI driver creates per volume (StorageClass `directoryPerms`,
    three octal digits)."""
    basePath: Annotated[str, matching(r"/[A-Za-z0-9/_-]*", "an absolute path of letters, digits, /, _ and -")] = (
        "/nemotron-model-cache"
    )
    """The directory under which the EFS access points' roots are made (EFS CSI StorageClass `basePath`); an absolute
    path, within EFS's access point path limit."""


class FsxSettings(Block):
    perUnitStorageThroughput: Literal[125, 250, 500, 1000] = 250
    """MB/s per TiB of storage of the PERSISTENT_2 file system (FSx for Lustre `PerUnitStorageThroughput`: 125, 250, 500
    or 1000)."""
    availabilityZone: Optional[AvailabilityZone] = None
    """The zone of the file system (FSx for Lustre lives in one subnet); unset: the one zone all managed GPU pools
    share, else required; an AZ of the created cluster."""
    fileSystemTypeVersion: Literal["2.15"] = "2.15"
    """The Lustre version (FSx `FileSystemTypeVersion`); only 2.15 is allowed."""
    dataCompressionType: Literal["NONE", "LZ4"] = "LZ4"
    """FSx for Lustre data compression (`DataCompressionType`): `LZ4` or `NONE`."""


class ModelCacheStorageConfig(Block):
    """The RWX StorageClass named `modelCache.storageClassName`; FSx capacity is `modelCache.size`."""

    backend: Literal["efs", "fsx"]
    """`efs`: an EFS file system with a mount target per zone (no Local Zones); `fsx`: an FSx for Lustre PERSISTENT_2
    file system in one zone, sized by `modelCache.size`."""
    protect: bool = False
    """Protect the file system from deletion (Pulumi `protect`) and keep volumes when claims go (`reclaimPolicy:
    Retain`); false: `Delete`."""
    efs: EfsSettings = EfsSettings()
    """Settings of the `efs` backend; set only with `backend: efs`."""
    fsx: FsxSettings = FsxSettings()
    """Settings of the `fsx` backend; set only with `backend: fsx`."""


class DevicePluginsConfig(Block):
    """Which device plugins the stack installs (each only where a pool needs it). Turn one off on a cluster
    that already runs it, e.g. through the NVIDIA GPU Operator or Network Operator. `draDriver`: the NVIDIA
    DRA driver with ComputeDomains, for pools of instance types with multi-node NVLink (P6e-GB200)."""

    nvidia: bool = True
    """Install the NVIDIA device plugin (`nvidia.com/gpu`), on the GPU pools."""
    efa: bool = True
    """Install the EFA device plugin (`vpc.amazonaws.com/efa`), on pools of EFA-capable instance types with fabric
    efa."""
    rdmaSharedDevice: bool = True
    """Install the RDMA shared device plugin, on pools with fabric ib (InfiniBand)."""
    draDriver: bool = True
    """Install the NVIDIA DRA driver with ComputeDomains, on pools of multi-node NVLink instance types (P6e-GB200)."""


class AwsConfig(Block):
    region: Region
    """The AWS Region of every AWS resource; must equal the stack's `aws:region` (one Region per stack)."""
    cluster: Optional[AwsClusterConfig] = None
    """The EKS cluster to create (`create`) or to add GPU node groups to (`existing`); unset: no cluster resources, the
    pools only describe nodes for placement."""
    systemNodeGroup: SystemNodeGroupConfig = SystemNodeGroupConfig()
    """The CPU node group of a created cluster, for the platform pods."""
    nodePools: list[NodePoolConfig] = pydantic.Field(default_factory=list)
    """GPU node pools: managed node groups the stack creates, or existing nodes it places targets on; `make plan
    WRITE=1` writes them from `demand`."""
    devicePlugins: DevicePluginsConfig = DevicePluginsConfig()
    """Which device plugins the stack installs where a pool needs them."""
    modelCacheStorage: Optional[ModelCacheStorageConfig] = None
    """The EFS or FSx file system and StorageClass behind the model cache, for a cluster the stack creates; unset:
    `modelCache.storageClassName` names a class that exists."""
    tags: AwsTags = pydantic.Field(default_factory=dict)
    """Tags on the stack's AWS resources, beside its own `Name` and pool tags; AWS tag keys and values (128 and 256
    characters, no `aws:` prefix)."""
