"""The AWS facts are data: every instance type of the issue is there with the published numbers, each
number has a source, and bad data stops the program naming the file and the key."""
from __future__ import annotations

import shutil

import pytest
import yaml

from serving_stack.facts.catalog import CATALOG_DIR
from serving_stack.errors import ConfigError
from serving_stack.facts.instance_types import load_aws_catalog

# instance type: (gpu, gpus, network cards, usable EFA, EFA per GPU, NVMe disks, arch, AMI, $/h, Capacity Blocks only)
EXPECTED = {
    "p5.48xlarge": ("h100", 8, 32, 32, 4, 8, "x86_64", "AL2023_x86_64_NVIDIA", 55.04, False),
    "p5.4xlarge": ("h100", 1, 1, 1, 1, 1, "x86_64", "AL2023_x86_64_NVIDIA", 6.88, False),
    "p5e.48xlarge": ("h200", 8, 32, 32, 4, 8, "x86_64", "AL2023_x86_64_NVIDIA", None, False),
    "p5en.48xlarge": ("h200", 8, 16, 16, 2, 8, "x86_64", "AL2023_x86_64_NVIDIA", 63.296, False),
    "p6-b200.48xlarge": ("b200", 8, 8, 8, 1, 8, "x86_64", "AL2023_x86_64_NVIDIA", 113.9328, False),
    "p6e-gb200.36xlarge": ("gb200", 4, 17, 4, 1, 3, "arm64", "AL2023_ARM_64_NVIDIA", None, True),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_instance_type_facts(name):
    facts = load_aws_catalog().instance_types[name]
    gpu, gpus, cards, efa, per_gpu, disks, arch, ami, price, blocks_only = EXPECTED[name]
    assert (facts.gpu, facts.gpus, facts.networkCards, facts.efaInterfaces) == (gpu, gpus, cards, efa)
    assert facts.efa_per_gpu == per_gpu
    assert (facts.nvmeDisks, facts.arch, facts.amiType) == (disks, arch, ami)
    assert facts.onDemandUsdPerHour == price
    assert facts.capacityBlocksOnly is blocks_only
    for number in ("gpus", "networkCards", "efaInterfaces", "onDemandUsdPerHour"):
        assert facts.sources[number]


def test_gb200_needs_kubernetes_1_33_and_the_arm_ami():
    gb200 = load_aws_catalog().instance_types["p6e-gb200.36xlarge"]
    assert gb200.minKubernetes == "1.33"
    assert load_aws_catalog().gpus["gb200"].arch == "arm64"


def test_gpu_product_labels_match_the_recipes():
    gpus = load_aws_catalog().gpus
    assert {name: gpu.productLabel for name, gpu in gpus.items()} == {
        "h100": "NVIDIA-H100-80GB-HBM3", "h200": "NVIDIA-H200", "b200": "NVIDIA-B200", "gb200": "NVIDIA-GB200",
    }
    assert "NVIDIA-H200-SXM" in gpus["h200"].product_labels
    assert load_aws_catalog().gpu_of_product("NVIDIA-H200-SXM") == "h200"


def test_device_plugin_charts_are_pinned():
    plugins = load_aws_catalog().platform.devicePlugins
    assert (plugins.nvidia.chart, plugins.nvidia.version) == ("nvidia-device-plugin", "0.19.3")
    assert (plugins.efa.chart, plugins.efa.version) == ("aws-efa-k8s-device-plugin", "v0.5.7")
    assert plugins.rdmaSharedDevice.image.endswith(":v1.5.3")


def _broken_catalog(tmp_path, file_name: str, edit) -> ConfigError:
    root = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, root, ignore=shutil.ignore_patterns("recipes", "jumpstart"))
    data = yaml.safe_load((root / file_name).read_text())
    edit(data)
    (root / file_name).write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as raised:
        load_aws_catalog(root)
    return raised.value


def test_a_number_without_a_source_is_rejected(tmp_path):
    error = _broken_catalog(tmp_path, "instance_types.yaml", lambda d: d["instanceTypes"]["p5.48xlarge"]["sources"].pop("networkCards"))
    assert str(error).startswith("catalog/instance_types.yaml: instanceTypes.p5.48xlarge: sources: no source for networkCards")


def test_an_efa_only_primary_interface_is_rejected(tmp_path):
    def make_primary_efa_only(data):
        data["instanceTypes"]["p6e-gb200.36xlarge"]["efaLayout"]["interfaces"][0]["interfaceType"] = "efa-only"

    error = _broken_catalog(tmp_path, "instance_types.yaml", make_primary_efa_only)
    assert "instanceTypes.p6e-gb200.36xlarge: efaLayout: the first interface must be card 0 device 0" in str(error)


def test_an_unknown_gpu_is_rejected(tmp_path):
    error = _broken_catalog(tmp_path, "instance_types.yaml", lambda d: d["instanceTypes"]["p5.4xlarge"].update(gpu="h300"))
    assert str(error) == "catalog/instance_types.yaml: instanceTypes.p5.4xlarge.gpu: unknown GPU 'h300'; allowed: h100, h200, b200, gb200"


def test_an_unknown_fabric_count_rule_is_rejected(tmp_path):
    error = _broken_catalog(tmp_path, "fabrics.yaml", lambda d: d["fabrics"]["efa"].update(count="two"))
    assert str(error).startswith("catalog/fabrics.yaml: fabrics.efa.count: Input should be 'efa-per-gpu' or 'one-per-worker'")
