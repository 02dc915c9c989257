"""The instance storage data: per instance type, stated with its source, consistent with the SageMaker SDK's
rule, with the EC2 facts of the same hardware and with botocore's list of endpoint instance types; a data
file that contradicts its rule is refused; the policy pack's copy of the local-storage list is the data's."""

from __future__ import annotations

import shutil

import botocore.session
import pytest
import yaml
from plan_helpers import FACTS
from policy_helpers import check_stack, resource

from policy.nemotron_policies.rules.data_protection import LOCAL_STORAGE_FAMILIES
from serving_stack.errors import ConfigError
from serving_stack.facts.sagemaker import load_instances_file
from serving_stack.facts.strict_files import DATA_DIR

INSTANCES = load_instances_file()
RULE = INSTANCES.storageRule
ENDPOINT_CONFIG = "aws:sagemaker/endpointConfiguration:EndpointConfiguration"
ENDPOINT_INSTANCE_TYPES = set(
    botocore.session.get_session().get_service_model("sagemaker").shape_for("ProductionVariantInstanceType").enum
)


@pytest.mark.parametrize("instance_type", sorted(INSTANCES.instances))
def test_storage_per_instance_type_follows_its_sources(instance_type):
    instance = INSTANCES.instances[instance_type]
    assert instance_type in ENDPOINT_INSTANCE_TYPES  # SageMaker hosts it (botocore's enum)
    assert instance.storageSource
    if RULE.says_nvme(instance_type):
        assert instance.storage == "nvme"
    assert (instance.storage == "nvme") == (instance.localNvmeGb is not None)
    ec2 = FACTS.aws.instance_types.get(instance_type.removeprefix("ml."))
    if ec2 is not None:  # the same hardware in the EC2 facts: local NVMe there means local NVMe here
        assert (ec2.nvmeDisks > 0) == (instance.storage == "nvme")
        assert ec2.nvmeDisks * ec2.nvmeDiskGB == instance.localNvmeGb


@pytest.mark.parametrize(
    ("family", "nvme"),
    [
        ("g5", True),
        ("g6", True),
        ("g6e", True),
        ("p5", True),
        ("p5e", True),
        ("p5en", True),
        ("trn1", True),
        ("p4d", True),
        ("c5d", True),
        ("g4dn", True),
        ("p6-b200", False),
        ("m5", False),
        ("p3", False),
    ],
)
def test_the_recorded_rule_is_the_sdks(family, nvme):
    """The SDK's own cases (JUMPSTART-FACTS.md corrections); p6-b200 is the data's stricter addition."""
    assert RULE.says_nvme(f"ml.{family}.2xlarge") is nvme


def test_data_that_contradicts_the_rule_is_refused(tmp_path):
    for path in DATA_DIR.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    data = yaml.safe_load((tmp_path / "sagemaker_instances.yaml").read_text())
    data["instances"]["ml.g6e.12xlarge"].update(storage="ebs", localNvmeGb=None)
    (tmp_path / "sagemaker_instances.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"ml\.g6e\.12xlarge: the storage rule .* says local NVMe, the data says ebs"):
        load_instances_file(tmp_path)


def family(instance_type: str) -> str:
    return instance_type.split(".")[1]


def test_the_policy_packs_local_storage_families_agree_with_the_data():
    for name, instance in INSTANCES.instances.items():
        assert (family(name) in LOCAL_STORAGE_FAMILIES) == (instance.storage == "nvme"), name


def test_the_policy_exempts_local_storage_variants_from_the_volume_key_only():
    def config(instance_type):
        return resource(
            ENDPOINT_CONFIG,
            {"productionVariants": [{"variantName": "AllTraffic", "instanceType": instance_type}]},
            name="endpoint-config",
        )

    assert (
        check_stack(
            "data-protection",
            [config(next(n for n, i in INSTANCES.instances.items() if i.storage == "nvme"))],
            stack="prod",
        )
        == []
    )
    (problem,) = check_stack("data-protection", [config("ml.m5.xlarge")], stack="prod")
    assert "has no kmsKeyArn" in problem[0]
