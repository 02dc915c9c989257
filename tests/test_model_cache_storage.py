"""Model-cache storage: an encrypted, Elastic-throughput EFS with mount targets in every AZ and an
`efs-ap` StorageClass, or an FSx for Lustre PERSISTENT_2 file system the stack creates in the GPU pools' AZ
with a static volume reserved for the model-cache claim; only what holds data is protected."""

from __future__ import annotations

import json

import pytest
from aws_helpers import inputs, run_components, the

from components.model_cache import ModelCacheStorage, ModelCacheStorageArgs
from serving_stack.config.aws import ModelCacheStorageConfig
from serving_stack.facts.aws import load_aws_catalog
from serving_stack.names import MODEL_CACHE_CLAIM
from serving_stack.plan.model_cache import StoragePlan

SUBNETS = {"us-east-1a": "subnet-0aaaaaaaaaaaaaaaa", "us-east-1b": "subnet-0bbbbbbbbbbbbbbbb"}
STORAGE_CLASS, ADDON = "kubernetes:storage.k8s.io/v1:StorageClass", "aws:eks/addon:Addon"
FSX, VOLUME = "aws:fsx/lustreFileSystem:LustreFileSystem", "kubernetes:core/v1:PersistentVolume"
INGRESS, EGRESS = (
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)


def storage(backend: str, protect: bool = False, throughput: int = 250, zone: str = "us-east-1a"):
    addons = load_aws_catalog().platform.eksAddons
    config = {"backend": backend, "protect": protect, "efs": {"basePath": "/nemotron-model-cache"}}
    config["fsx"] = {"perUnitStorageThroughput": throughput}
    addon = addons.efsCsiDriver if backend == "efs" else addons.fsxCsiDriver
    fsx = (zone, 1200) if backend == "fsx" else (None, 0)
    plan = StoragePlan(ModelCacheStorageConfig.model_validate(config), "model-cache", addon, *fsx)

    def build():
        ModelCacheStorage(
            "cache",
            ModelCacheStorageArgs(
                storage=plan,
                cluster_name="nemotron",
                vpc_id="vpc-0123456789abcdef0",
                vpc_cidr="10.0.0.0/16",
                private_subnet_ids_by_az=SUBNETS,
                claim_namespace="serving",
            ),
        )

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
        "provisioningMode": "efs-ap",
        "fileSystemId": "cache-efs-id",
        "directoryPerms": "700",
        "basePath": "/nemotron-model-cache",
    }
    assert storage_class["reclaimPolicy"] == "Retain"
    assert not run.named("cache-storage-class").protect  # it only describes the file system
    nfs = the(run, INGRESS)
    assert (nfs["fromPort"], nfs["toPort"], nfs["cidrIpv4"]) == (2049, 2049, "10.0.0.0/16")


def test_fsx_file_system_in_the_pools_az_with_a_volume_reserved_for_the_claim():
    run = storage("fsx", protect=True, throughput=500, zone="us-east-1b")
    fsx = the(run, FSX)
    assert fsx["subnetIds"] == SUBNETS["us-east-1b"] and fsx["securityGroupIds"] == ["cache-sg-id"]
    assert (fsx["deploymentType"], fsx["perUnitStorageThroughput"], fsx["storageCapacity"]) == (
        "PERSISTENT_2",
        500,
        1200,
    )
    assert (fsx["fileSystemTypeVersion"], fsx["dataCompressionType"], fsx["skipFinalBackup"]) == ("2.15", "LZ4", True)
    assert run.named("cache-fsx").protect and not run.named("cache-volume").protect
    volume = the(run, VOLUME)
    assert volume["spec"]["claimRef"] == {"namespace": "serving", "name": MODEL_CACHE_CLAIM}
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert volume["spec"]["storageClassName"] == "model-cache" and volume["spec"]["capacity"] == {"storage": "1200Gi"}
    assert volume["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "cache-fsx-id",
        "volumeAttributes": {"dnsname": "cache-fsx-id.fsx.us-east-1.amazonaws.com", "mountname": "mockmnt"},
    }
    assert run.of_type(STORAGE_CLASS) == [] and run.of_type("aws:efs/fileSystem:FileSystem") == []


def test_fsx_security_group_allows_lustre_both_ways():
    """Lustre clients and servers talk on 988 and 1018-1023 in both directions (FSx user guide)."""
    run = storage("fsx")
    expected = {(988, 988), (1018, 1023)}
    ingress, egress = inputs(run, INGRESS), inputs(run, EGRESS)
    assert {(r["fromPort"], r["toPort"]) for r in ingress if r.get("cidrIpv4") == "10.0.0.0/16"} == expected
    assert {
        (r["fromPort"], r["toPort"]) for r in ingress if r.get("referencedSecurityGroupId") == "cache-sg-id"
    } == expected
    assert {(r["fromPort"], r["toPort"]) for r in egress if r.get("cidrIpv4") == "10.0.0.0/16"} == expected
    assert {
        (r["fromPort"], r["toPort"]) for r in egress if r.get("referencedSecurityGroupId") == "cache-sg-id"
    } == expected


def test_efs_csi_driver_uses_pod_identity_and_fsx_needs_no_aws_permissions():
    efs = storage("efs")
    addon = the(efs, ADDON)
    assert addon["addonName"] == "aws-efs-csi-driver"
    assert addon["podIdentityAssociations"] == [
        {"roleArn": "arn:aws:iam:us-east-1:123456789012:role/cache-csi-role", "serviceAccount": "efs-csi-controller-sa"}
    ]
    trust = json.loads(the(efs, "aws:iam/role:Role")["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert set(trust["Statement"][0]["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    fsx = storage("fsx")
    assert the(fsx, ADDON)["addonName"] == "aws-fsx-csi-driver" and "podIdentityAssociations" not in the(fsx, ADDON)
    assert fsx.of_type("aws:iam/role:Role") == []  # a static volume is only mounted: no FSx API calls


@pytest.mark.parametrize("backend", ["efs", "fsx"])
def test_unprotected_storage_is_deletable(backend):
    run = storage(backend, protect=False)
    assert not any(r.protect for r in run.resources)
