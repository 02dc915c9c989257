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
from typing import Literal, Mapping, Optional

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from serving_stack.config.aws import EfsSettings, FsxSettings
from serving_stack.facts.instance_types import CsiAddon

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
POD_IDENTITY_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"}, "Action": ["sts:AssumeRole", "sts:TagSession"]}],
}
LUSTRE_PORTS = [(988, 988), (1018, 1023)]
NFS_PORTS = [(2049, 2049)]


@dataclass(frozen=True)
class ModelCacheStorageArgs:
    backend: Literal["efs", "fsx"]
    storage_class_name: str
    protect: bool
    cluster_name: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    vpc_cidr: str
    private_subnet_ids_by_az: Mapping[str, pulumi.Input[str]]
    csi_addon: CsiAddon
    efs: EfsSettings = EfsSettings()
    fsx: FsxSettings = FsxSettings()
    fsx_availability_zone: Optional[str] = None
    tags: Mapping[str, str] = field(default_factory=dict)


class ModelCacheStorage(pulumi.ComponentResource):
    storage_class_name: pulumi.Output[str]
    csi_driver: aws.eks.Addon

    def __init__(self, name: str, args: ModelCacheStorageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemotron:aws:ModelCacheStorage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        protected = pulumi.ResourceOptions(parent=self, protect=args.protect)
        tags = dict(args.tags)
        ports = NFS_PORTS if args.backend == "efs" else LUSTRE_PORTS
        group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"Model cache ({args.backend}): clients in the VPC",
            tags={**tags, "Name": f"model-cache-{args.backend}"},
            opts=child,
        )
        for low, high in ports:
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-from-vpc-{low}", security_group_id=group.id, cidr_ipv4=args.vpc_cidr,
                ip_protocol="tcp", from_port=low, to_port=high, opts=child,
            )
            if args.backend == "fsx":
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-from-self-{low}", security_group_id=group.id, referenced_security_group_id=group.id,
                    ip_protocol="tcp", from_port=low, to_port=high, opts=child,
                )
        role = aws.iam.Role(f"{name}-csi-role", assume_role_policy=json.dumps(POD_IDENTITY_TRUST), tags=tags, opts=child)
        if args.backend == "efs":
            policy = aws.iam.RolePolicyAttachment(f"{name}-csi-policy", role=role.name, policy_arn=EFS_CSI_POLICY, opts=child)
            provisioner, parameters = "efs.csi.aws.com", self._efs_parameters(name, args, group, tags, protected)
        else:
            policy = aws.iam.RolePolicy(f"{name}-csi-policy", role=role.id, policy=json.dumps(FSX_CSI_POLICY), opts=child)
            provisioner = "fsx.csi.aws.com"
            parameters = {
                "subnetId": args.private_subnet_ids_by_az[args.fsx_availability_zone],
                "securityGroupIds": group.id,
                "deploymentType": "PERSISTENT_2",
                "perUnitStorageThroughput": str(args.fsx.perUnitStorageThroughput),
                "fileSystemTypeVersion": args.fsx.fileSystemTypeVersion,
                "dataCompressionType": args.fsx.dataCompressionType,
            }
        self.csi_driver = aws.eks.Addon(
            f"{name}-csi-driver",
            cluster_name=args.cluster_name,
            addon_name=args.csi_addon.name,
            addon_version=args.csi_addon.version,
            pod_identity_associations=[
                aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=args.csi_addon.serviceAccount)
            ],
            resolve_conflicts_on_create="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        storage_class = k8s.storage.v1.StorageClass(
            f"{name}-storage-class",
            metadata={"name": args.storage_class_name},
            provisioner=provisioner,
            parameters=parameters,
            reclaim_policy="Retain" if args.protect else "Delete",
            volume_binding_mode="Immediate",
            allow_volume_expansion=args.backend == "fsx",
            mount_options=["flock"] if args.backend == "fsx" else None,
            opts=protected,
        )
        self.storage_class_name = storage_class.metadata.name
        self.register_outputs({"storageClassName": self.storage_class_name})

    def _efs_parameters(
        self, name: str, args: ModelCacheStorageArgs, group: aws.ec2.SecurityGroup, tags: dict[str, str], protected: pulumi.ResourceOptions
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
            "directoryPerms": args.efs.directoryPerms,
            "basePath": args.efs.basePath,
        }
