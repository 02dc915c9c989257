"""The model cache's ReadWriteMany storage the stack creates for the cluster it creates, with its CSI driver.

EFS: the stack owns the file system (Elastic throughput, encrypted, a mount target per AZ); an `efs-ap`
StorageClass provisions an access point per claim in seconds (the driver authenticates with EKS Pod
Identity). FSx for Lustre: the stack creates the PERSISTENT_2 file system itself, in the GPU pools' AZ,
beside the EKS cluster rather than after it (dynamic provisioning would start it only once the cluster,
its nodes and the CSI driver run, 5-15 more minutes on the critical path), and a static PersistentVolume
the claim binds to at once; the driver then only mounts, so it needs no AWS permissions.

What holds data is protected when `protect` is set: the file system. The StorageClass and the volume only
describe it (protect would block every later change); volumes are retained (`Retain`) when a claim goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.iam import assume_role_policy
from serving_stack.names import TypeTokens
from serving_stack.plan.storage import EfsOptions, FsxOptions, StoragePlan

EFS_CSI_POLICY = "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"
LUSTRE_PORTS = [(988, 988), (1018, 1023)]
NFS_PORTS = [(2049, 2049)]


@dataclass(frozen=True)
class ModelCacheStorageArgs:
    """`claim_namespace`: where the model-cache claim lives (an FSx volume is bound to it alone)."""

    storage: StoragePlan  # the file system as planned (backend, size, throughput, protection)
    cluster_name: pulumi.Input[str]  # the EKS cluster (its CSI driver's Pod Identity association)
    vpc_id: pulumi.Input[str]  # the VPC of the file system's security group
    vpc_cidr: str  # who may mount it (NFS / Lustre ports)
    private_subnet_ids_by_az: Mapping[str, pulumi.Input[str]]  # where mount targets go, by zone
    claim_namespace: str  # the namespace of the claim a static volume binds to
    tags: Mapping[str, str] = field(default_factory=dict)  # tags on every AWS resource it creates


class ModelCacheStorage(pulumi.ComponentResource):
    """`volume_name`: the PersistentVolume the claim binds to (FSx), None for dynamic provisioning (EFS);
    `csi_driver`: what mounting pods need (their claims depend on it)."""

    volume_name: Optional[pulumi.Output[str]]
    csi_driver: aws.eks.Addon

    def __init__(self, name: str, args: ModelCacheStorageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.MODEL_CACHE_STORAGE, name, None, opts)
        storage = args.storage
        group = self._security_group(name, args)
        self.volume_name = None
        if storage.efs is not None:
            role = aws.iam.Role(
                f"{name}-csi-role",
                assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", tag_session=True),
                tags=dict(args.tags),
                opts=pulumi.ResourceOptions(parent=self),
            )
            policy = aws.iam.RolePolicyAttachment(
                f"{name}-csi-policy",
                role=role.name,
                policy_arn=EFS_CSI_POLICY,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.csi_driver = self._csi_driver(
                name,
                args,
                [
                    aws.eks.AddonPodIdentityAssociationArgs(
                        role_arn=role.arn, service_account=storage.csi_addon.serviceAccount
                    )
                ],
                [policy],
            )
            self._efs(name, storage.efs, args, group)
        elif storage.fsx is not None:
            self.csi_driver = self._csi_driver(name, args, None, [])
            self.volume_name = self._fsx(name, storage.fsx, args, group)
        else:
            raise ValueError(f"storage backend {storage.backend!r} has no options")
        self.register_outputs({"volumeName": self.volume_name})

    def _security_group(self, name: str, args: ModelCacheStorageArgs) -> aws.ec2.SecurityGroup:
        """Clients in the VPC reach the file system on its ports; Lustre servers and clients also talk to
        each other on them, so FSx gets the same ports out (to the VPC) and to and from itself. pulumi-aws
        removes AWS's default allow-all egress, so the egress here is all there is."""
        child = pulumi.ResourceOptions(parent=self)
        backend = args.storage.backend
        group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"Model cache ({backend}): clients in the VPC",
            tags={**args.tags, "Name": f"model-cache-{backend}"},
            opts=child,
        )
        for low, high in NFS_PORTS if backend == "efs" else LUSTRE_PORTS:
            ports = {"ip_protocol": "tcp", "from_port": low, "to_port": high, "opts": child}
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-from-vpc-{low}", security_group_id=group.id, cidr_ipv4=args.vpc_cidr, **ports
            )
            if backend == "fsx":
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-from-self-{low}",
                    security_group_id=group.id,
                    referenced_security_group_id=group.id,
                    **ports,
                )
                aws.vpc.SecurityGroupEgressRule(
                    f"{name}-to-vpc-{low}", security_group_id=group.id, cidr_ipv4=args.vpc_cidr, **ports
                )
                aws.vpc.SecurityGroupEgressRule(
                    f"{name}-to-self-{low}", security_group_id=group.id, referenced_security_group_id=group.id, **ports
                )
        return group

    def _csi_driver(
        self,
        name: str,
        args: ModelCacheStorageArgs,
        identities: Optional[list[aws.eks.AddonPodIdentityAssociationArgs]],
        depends_on: list[pulumi.Resource],
    ) -> aws.eks.Addon:
        addon = args.storage.csi_addon
        return aws.eks.Addon(
            f"{name}-csi-driver",
            cluster_name=args.cluster_name,
            addon_name=addon.name,
            addon_version=addon.version,
            pod_identity_associations=identities,
            resolve_conflicts_on_create="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on),
        )

    def _efs(self, name: str, efs: EfsOptions, args: ModelCacheStorageArgs, group: aws.ec2.SecurityGroup) -> None:
        """The file system, a mount target per AZ, and the `efs-ap` StorageClass."""
        storage = args.storage
        file_system = aws.efs.FileSystem(
            f"{name}-efs",
            encrypted=True,
            throughput_mode="elastic",
            performance_mode="generalPurpose",
            tags={**args.tags, "Name": "model-cache"},
            opts=pulumi.ResourceOptions(parent=self, protect=storage.protect),
        )
        for zone, subnet_id in args.private_subnet_ids_by_az.items():
            aws.efs.MountTarget(
                f"{name}-efs-{zone}",
                file_system_id=file_system.id,
                subnet_id=subnet_id,
                security_groups=[group.id],
                opts=pulumi.ResourceOptions(parent=self),
            )
        k8s.storage.v1.StorageClass(
            f"{name}-storage-class",
            metadata={"name": storage.storage_class_name},
            provisioner="efs.csi.aws.com",
            parameters={
                "provisioningMode": "efs-ap",
                "fileSystemId": file_system.id,
                "directoryPerms": efs.directory_perms,
                "basePath": efs.base_path,
            },
            reclaim_policy="Retain" if storage.protect else "Delete",
            volume_binding_mode="Immediate",
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _fsx(
        self, name: str, fsx: FsxOptions, args: ModelCacheStorageArgs, group: aws.ec2.SecurityGroup
    ) -> pulumi.Output[str]:
        """The file system (encrypted at rest by FSx) and the PersistentVolume bound to the model-cache claim."""
        storage = args.storage
        file_system = aws.fsx.LustreFileSystem(
            f"{name}-fsx",
            storage_capacity=fsx.capacity_gib,
            subnet_ids=args.private_subnet_ids_by_az[fsx.availability_zone],
            security_group_ids=[group.id],
            deployment_type="PERSISTENT_2",
            per_unit_storage_throughput=fsx.per_unit_storage_throughput,
            file_system_type_version=fsx.file_system_type_version,
            data_compression_type=fsx.data_compression_type,
            # A model cache is refilled by the download Job: no backup to take or pay for on deletion.
            skip_final_backup=True,
            tags={**args.tags, "Name": "model-cache"},
            opts=pulumi.ResourceOptions(parent=self, protect=storage.protect),
        )
        volume = k8s.core.v1.PersistentVolume(
            f"{name}-volume",
            metadata={"name": f"{storage.storage_class_name}-model-cache"},
            spec={
                "capacity": {"storage": f"{fsx.capacity_gib}Gi"},
                "volumeMode": "Filesystem",
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": storage.storage_class_name,
                "mountOptions": ["flock"],
                "claimRef": {"namespace": args.claim_namespace, "name": storage.claim_name},
                "csi": {
                    "driver": "fsx.csi.aws.com",
                    "volumeHandle": file_system.id,
                    "volumeAttributes": {"dnsname": file_system.dns_name, "mountname": file_system.mount_name},
                },
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        volume_name: pulumi.Output[str] = volume.metadata.name
        return volume_name
