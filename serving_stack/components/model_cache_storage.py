"""The ReadWriteMany StorageClass the model cache PVC uses, backed by EFS or FSx for Lustre, with its CSI
driver (EKS add-on, IAM through EKS Pod Identity).

EFS: the stack owns the file system (Elastic throughput, encrypted, a mount target per AZ); the class
provisions an access point per volume. FSx for Lustre: the class provisions a PERSISTENT_2 file system
per volume in the GPU pools' AZ, sized by the PVC. `protect` keeps production data: the EFS file system
is a protected resource, and either class retains its volumes (`reclaimPolicy: Retain`) when a claim goes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping, Optional

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from serving_stack.components.iam import assume_role_policy
from serving_stack.names import TypeTokens
from serving_stack.plan.storage import EfsOptions, StoragePlan

EFS_CSI_POLICY = "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"
# The FSx CSI controller's needs (aws-fsx-csi-driver docs) without a data repository in S3.
FSX_CSI_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": "iam:CreateServiceLinkedRole",
            "Resource": "*",
            "Condition": {"StringLike": {"iam:AWSServiceName": ["fsx.amazonaws.com"]}},
        },
        {
            "Effect": "Allow",
            "Action": ["fsx:CreateFileSystem", "fsx:DeleteFileSystem", "fsx:DescribeFileSystems", "fsx:UpdateFileSystem", "fsx:TagResource"],
            "Resource": "*",
        },
    ],
}
LUSTRE_PORTS = [(988, 988), (1018, 1023)]
NFS_PORTS = [(2049, 2049)]


@dataclass(frozen=True)
class ModelCacheStorageArgs:
    storage: StoragePlan
    cluster_name: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    vpc_cidr: str
    private_subnet_ids_by_az: Mapping[str, pulumi.Input[str]]
    tags: Mapping[str, str] = field(default_factory=dict)


class ModelCacheStorage(pulumi.ComponentResource):
    storage_class_name: pulumi.Output[str]
    csi_driver: aws.eks.Addon

    def __init__(self, name: str, args: ModelCacheStorageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.MODEL_CACHE_STORAGE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        storage = args.storage
        protected = pulumi.ResourceOptions(parent=self, protect=storage.protect)
        tags = dict(args.tags)
        ports = NFS_PORTS if storage.backend == "efs" else LUSTRE_PORTS
        group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"Model cache ({storage.backend}): clients in the VPC",
            tags={**tags, "Name": f"model-cache-{storage.backend}"},
            opts=child,
        )
        for low, high in ports:
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-from-vpc-{low}", security_group_id=group.id, cidr_ipv4=args.vpc_cidr,
                ip_protocol="tcp", from_port=low, to_port=high, opts=child,
            )
            if storage.backend == "fsx":
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-from-self-{low}", security_group_id=group.id, referenced_security_group_id=group.id,
                    ip_protocol="tcp", from_port=low, to_port=high, opts=child,
                )
        role = aws.iam.Role(f"{name}-csi-role", assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", tag_session=True), tags=tags, opts=child)
        if storage.backend == "efs":
            policy = aws.iam.RolePolicyAttachment(f"{name}-csi-policy", role=role.name, policy_arn=EFS_CSI_POLICY, opts=child)
            if storage.efs is None:
                raise ValueError("an efs backend needs EfsOptions")
            provisioner, parameters = "efs.csi.aws.com", self._efs_parameters(name, storage.efs, args, group, tags, protected)
        else:
            policy = aws.iam.RolePolicy(f"{name}-csi-policy", role=role.id, policy=json.dumps(FSX_CSI_POLICY), opts=child)
            fsx = storage.fsx
            if fsx is None:
                raise ValueError("an fsx backend needs FsxOptions")
            provisioner = "fsx.csi.aws.com"
            parameters = {
                "subnetId": args.private_subnet_ids_by_az[fsx.availability_zone],
                "securityGroupIds": group.id,
                "deploymentType": "PERSISTENT_2",
                "perUnitStorageThroughput": str(fsx.per_unit_storage_throughput),
                "fileSystemTypeVersion": fsx.file_system_type_version,
                "dataCompressionType": fsx.data_compression_type,
            }
        self.csi_driver = aws.eks.Addon(
            f"{name}-csi-driver",
            cluster_name=args.cluster_name,
            addon_name=storage.csi_addon.name,
            addon_version=storage.csi_addon.version,
            pod_identity_associations=[
                aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=storage.csi_addon.serviceAccount)
            ],
            resolve_conflicts_on_create="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        storage_class = k8s.storage.v1.StorageClass(
            f"{name}-storage-class",
            metadata={"name": storage.storage_class_name},
            provisioner=provisioner,
            parameters=parameters,
            reclaim_policy="Retain" if storage.protect else "Delete",
            volume_binding_mode="Immediate",
            allow_volume_expansion=storage.backend == "fsx",
            mount_options=["flock"] if storage.backend == "fsx" else None,
            opts=protected,
        )
        self.storage_class_name = storage_class.metadata.name
        self.register_outputs({"storageClassName": self.storage_class_name})

    def _efs_parameters(
        self, name: str, efs: EfsOptions, args: ModelCacheStorageArgs, group: aws.ec2.SecurityGroup, tags: dict[str, str], protected: pulumi.ResourceOptions
    ) -> dict[str, pulumi.Input[str]]:
        """The protected file system and a mount target per AZ; the `efs-ap` StorageClass parameters."""
        file_system = aws.efs.FileSystem(
            f"{name}-efs",
            encrypted=True,
            throughput_mode="elastic",
            performance_mode="generalPurpose",
            tags={**tags, "Name": "model-cache"},
            opts=protected,
        )
        for zone, subnet_id in args.private_subnet_ids_by_az.items():
            aws.efs.MountTarget(
                f"{name}-efs-{zone}", file_system_id=file_system.id, subnet_id=subnet_id, security_groups=[group.id],
                opts=pulumi.ResourceOptions(parent=self),
            )
        return {
            "provisioningMode": "efs-ap",
            "fileSystemId": file_system.id,
            "directoryPerms": efs.directory_perms,
            "basePath": efs.base_path,
        }
