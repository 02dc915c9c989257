"""Model-cache storage: an encrypted, Elastic-throughput EFS with mount targets in every AZ and an
`efs-ap` StorageClass, or an FSx for Lustre PERSISTENT_2 StorageClass in the GPU pools' AZ; the CSI
driver add-on authenticates with EKS Pod Identity; production storage is protected."""
from __future__ import annotations

import json

import pytest

from aws_helpers import inputs, run_components, the
from serving_stack.components.model_cache_storage import ModelCacheStorage, ModelCacheStorageArgs
from serving_stack.facts.instance_types import load_aws_catalog
from serving_stack.plan.storage import EfsOptions, FsxOptions, StoragePlan

SUBNETS = {"us-east-1a": "subnet-0aaaaaaaaaaaaaaaa", "us-east-1b": "subnet-0bbbbbbbbbbbbbbbb"}
STORAGE_CLASS, ADDON = "kubernetes:storage.k8s.io/v1:StorageClass", "aws:eks/addon:Addon"


def storage(backend: str, protect: bool = False, throughput: int = 250, fsx_availability_zone: str = "us-east-1a"):
    addons = load_aws_catalog().platform.eksAddons
    plan = StoragePlan(
        backend=backend, storage_class_name="model-cache", protect=protect,
        csi_addon=addons.efsCsiDriver if backend == "efs" else addons.fsxCsiDriver,
        efs=EfsOptions("700", "/nemotron-model-cache") if backend == "efs" else None,
        fsx=FsxOptions(throughput, "2.15", "LZ4", fsx_availability_zone) if backend == "fsx" else None,
    )

    def build():
        ModelCacheStorage("cache", ModelCacheStorageArgs(
            storage=plan, cluster_name="nemotron", vpc_id="vpc-0123456789abcdef0", vpc_cidr="10.0.0.0/16",
            private_subnet_ids_by_az=SUBNETS,
        ))

    return run_components(build)


def test_efs_file_system_mount_targets_and_storage_class():
    run = storage("efs", protect=True)
    file_system = the(run, "aws:efs/fileSystem:FileSystem")
    assert (file_system["encrypted"], file_system["throughputMode"]) == (True, "elastic")
    assert run.named("cache-efs").protect
    targets = inputs(run, "aws:efs/mountTarget:MountTarget")
    assert sorted(t["subnetId"] for t in targets) == sorted(SUBNETS.values())
    assert all(t["securityGroups"] == ["cache-sg-id"] for t in targets)
    storage_class = the(run, STORAGE_CLASS)
    assert storage_class["metadata"]["name"] == "model-cache"
    assert storage_class["provisioner"] == "efs.csi.aws.com"
    assert storage_class["parameters"] == {
        "provisioningMode": "efs-ap", "fileSystemId": "cache-efs-id", "directoryPerms": "700", "basePath": "/nemotron-model-cache",
    }
    assert storage_class["reclaimPolicy"] == "Retain"
    nfs = the(run, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    assert (nfs["fromPort"], nfs["toPort"], nfs["cidrIpv4"]) == (2049, 2049, "10.0.0.0/16")


def test_fsx_storage_class_in_the_pools_az():
    run = storage("fsx", protect=True, throughput=500, fsx_availability_zone="us-east-1b")
    storage_class = the(run, STORAGE_CLASS)
    assert storage_class["provisioner"] == "fsx.csi.aws.com"
    assert storage_class["parameters"] == {
        "subnetId": SUBNETS["us-east-1b"],
        "securityGroupIds": "cache-sg-id",
        "deploymentType": "PERSISTENT_2",
        "perUnitStorageThroughput": "500",
        "fileSystemTypeVersion": "2.15",
        "dataCompressionType": "LZ4",
    }
    assert storage_class["reclaimPolicy"] == "Retain" and run.named("cache-storage-class").protect
    assert storage_class["mountOptions"] == ["flock"]
    ports = sorted({(r["fromPort"], r["toPort"]) for r in inputs(run, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")})
    assert ports == [(988, 988), (1018, 1023)]
    assert run.of_type("aws:efs/fileSystem:FileSystem") == []


@pytest.mark.parametrize("backend, service_account", [("efs", "efs-csi-controller-sa"), ("fsx", "fsx-csi-controller-sa")])
def test_csi_driver_addon_uses_pod_identity(backend, service_account):
    run = storage(backend)
    addon = the(run, ADDON)
    assert addon["addonName"] == f"aws-{backend}-csi-driver"
    assert addon["podIdentityAssociations"] == [{"roleArn": "arn:aws:iam:us-east-1:123456789012:role/cache-csi-role", "serviceAccount": service_account}]
    trust = json.loads(the(run, "aws:iam/role:Role")["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert set(trust["Statement"][0]["Action"]) == {"sts:AssumeRole", "sts:TagSession"}


def test_fsx_csi_policy_is_scoped_not_full_access():
    run = storage("fsx")
    policy = json.loads(the(run, "aws:iam/rolePolicy:RolePolicy")["policy"])
    actions = {a for s in policy["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert "fsx:*" not in actions and "fsx:CreateFileSystem" in actions
    assert run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") == []


def test_unprotected_storage_deletes_its_volumes():
    run = storage("efs", protect=False)
    assert the(run, STORAGE_CLASS)["reclaimPolicy"] == "Delete"
    assert not run.named("cache-efs").protect
