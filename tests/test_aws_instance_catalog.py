"""The AWS facts are data: every instance type of the issue is there with the published numbers (written
out here from AWS's documentation, not read from the data), each number has a source, the pins support
every type, and bad data stops the program naming the file and the key."""

from __future__ import annotations

import shutil

import pytest
import yaml

from serving_stack.errors import ConfigError
from serving_stack.facts.aws import load_aws_catalog, version_key
from serving_stack.facts.catalog import CATALOG_DIR

ALL = ("on-demand", "spot", "odcr", "capacity-block")
# instance type: (gpu, gpus, network cards, usable EFA, EFA per GPU, NVMe disks, arch, AMI, $/h, capacity types)
EXPECTED = {
    "p5.48xlarge": ("h100", 8, 32, 32, 4, 8, "x86_64", "AL2023_x86_64_NVIDIA", 55.04, ALL),
    "p5.4xlarge": ("h100", 1, 1, 1, 1, 1, "x86_64", "AL2023_x86_64_NVIDIA", 6.88, ALL[:3]),
    "p5e.48xlarge": ("h200", 8, 32, 32, 4, 8, "x86_64", "AL2023_x86_64_NVIDIA", None, ALL),
    "p5en.48xlarge": ("h200", 8, 16, 16, 2, 8, "x86_64", "AL2023_x86_64_NVIDIA", 63.296, ALL),
    "p6-b200.48xlarge": ("b200", 8, 8, 8, 1, 8, "x86_64", "AL2023_x86_64_NVIDIA", 113.9328, ALL),
    "p6e-gb200.36xlarge": ("gb200", 4, 17, 4, 1, 3, "arm64", "AL2023_ARM_64_NVIDIA", None, ("capacity-block",)),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_instance_type_facts(name):
    facts = load_aws_catalog().instance_types[name]
    gpu, gpus, cards, efa, per_gpu, disks, arch, ami, price, capacity = EXPECTED[name]
    assert (facts.gpu, facts.gpus, facts.networkCards, facts.efaInterfaces) == (gpu, gpus, cards, efa)
    assert facts.efa_per_gpu == per_gpu
    assert (facts.nvmeDisks, facts.arch, facts.amiType) == (disks, arch, ami)
    assert facts.onDemandUsdPerHour == price
    assert tuple(facts.capacityTypes) == capacity
    for number in ("gpus", "networkCards", "efaInterfaces", "onDemandUsdPerHour", "capacityTypes"):
        assert facts.sources[number]


def test_gb200_ultraservers_in_dallas_with_dra_efa_plugin_0_5_14_and_kubernetes_1_33():
    gb200 = load_aws_catalog().instance_types["p6e-gb200.36xlarge"]
    assert (gb200.minKubernetes, gb200.minEfaDevicePlugin, gb200.computeDomains) == ("1.33", "0.5.14", True)
    assert (gb200.zoneType, gb200.localZoneGroups) == ("local-zone", ["us-east-1-dfw-2"])
    assert load_aws_catalog().gpus["gb200"].arch == "arm64"
    # EC2 User Guide, EFA for P6e-GB200: one EFA-only interface per GPU pair of cards, on 1, 5, 9, 13.
    layout = [(i.networkCardIndex, i.deviceIndex, i.interfaceType) for i in gb200.efa_layout()]
    assert layout == [(0, 0, "interface"), *((card, 0, "efa-only") for card in (1, 5, 9, 13))]


def test_gpu_product_labels_match_the_recipes():
    gpus = load_aws_catalog().gpus
    assert {name: gpu.productLabel for name, gpu in gpus.items()} == {
        "h100": "NVIDIA-H100-80GB-HBM3",
        "h200": "NVIDIA-H200",
        "b200": "NVIDIA-B200",
        "gb200": "NVIDIA-GB200",
    }
    assert "NVIDIA-H200-SXM" in gpus["h200"].product_labels
    assert load_aws_catalog().gpu_of_product("NVIDIA-H200-SXM") == "h200"


@pytest.mark.parametrize("name", sorted(load_aws_catalog().instance_types))
def test_the_pinned_plugins_support_the_instance_type(name):
    """Derived from the data: the EFA chart's own instance list holds every EFA type, its version meets the
    type's minimum, the NVIDIA plugin runs on its architecture, and the DRA driver on its Kubernetes."""
    catalog = load_aws_catalog()
    instance, pins, dra = catalog.instance_types[name], catalog.platform.devicePlugins, catalog.platform.draDriver
    assert name in pins.efa.supportedInstanceTypes
    minimum = version_key(instance.minEfaDevicePlugin or "0.0.0")
    assert version_key(pins.efa.version) >= minimum
    assert version_key(pins.efa.appVersion) >= minimum
    assert instance.arch in pins.nvidia.architectures
    if instance.computeDomains:
        assert version_key(instance.minKubernetes or "") >= version_key(dra.minKubernetes)


def test_every_chart_pin_names_its_source():
    platform = load_aws_catalog().platform
    for chart in (platform.devicePlugins.nvidia, platform.devicePlugins.efa, platform.draDriver):
        assert chart.version in chart.source


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
    error = _broken_catalog(
        tmp_path, "instance_types.yaml", lambda d: d["instanceTypes"]["p5.48xlarge"]["sources"].pop("networkCards")
    )
    assert str(error).startswith(
        "catalog/instance_types.yaml: instanceTypes.p5.48xlarge.sources: no source for networkCards"
    )


def test_an_efa_only_primary_interface_is_rejected(tmp_path):
    def make_primary_efa_only(data):
        data["instanceTypes"]["p6e-gb200.36xlarge"]["efaLayout"]["interfaces"][0]["interfaceType"] = "efa-only"

    error = _broken_catalog(tmp_path, "instance_types.yaml", make_primary_efa_only)
    assert "instanceTypes.p6e-gb200.36xlarge.efaLayout: the first interface must be card 0 device 0" in str(error)


def test_efa_only_interfaces_must_equal_the_efa_count(tmp_path):
    """The GB200 layout of all eight odd cards exposes 8 devices: count, label and requests would disagree."""

    def all_odd_cards(data):
        interfaces = data["instanceTypes"]["p6e-gb200.36xlarge"]["efaLayout"]["interfaces"]
        interfaces[1:] = [
            {"networkCardIndex": card, "deviceIndex": 0, "interfaceType": "efa-only"} for card in range(1, 16, 2)
        ]

    error = _broken_catalog(tmp_path, "instance_types.yaml", all_odd_cards)
    assert "instanceTypes.p6e-gb200.36xlarge.efaLayout: 8 efa-only interfaces, but efaInterfaces is 4" in str(error)


def test_an_efa_plugin_older_than_a_type_needs_is_rejected(tmp_path):
    def downgrade(data):
        data["devicePlugins"]["efa"].update(version="v0.5.7", appVersion="v0.5.7")

    error = _broken_catalog(tmp_path, "aws_platform.yaml", downgrade)
    assert str(error) == (
        "catalog/instance_types.yaml: instanceTypes.p6e-gb200.36xlarge.minEfaDevicePlugin: needs the EFA "
        "device plugin 0.5.14+, pinned chart v0.5.7 (plugin v0.5.7)"
    )


def test_an_efa_type_the_plugin_chart_does_not_list_is_rejected(tmp_path):
    error = _broken_catalog(
        tmp_path,
        "aws_platform.yaml",
        lambda d: d["devicePlugins"]["efa"]["supportedInstanceTypes"].remove("p6-b200.48xlarge"),
    )
    assert str(error).startswith(
        "catalog/instance_types.yaml: instanceTypes.p6-b200.48xlarge: the pinned EFA device plugin chart"
    )


def test_an_unknown_local_zone_group_is_rejected(tmp_path):
    error = _broken_catalog(
        tmp_path,
        "instance_types.yaml",
        lambda d: d["instanceTypes"]["p6e-gb200.36xlarge"].update(localZoneGroups=["us-east-1-dfw-9"]),
    )
    assert "instanceTypes.p6e-gb200.36xlarge.localZoneGroups: 'us-east-1-dfw-9' is not a Local Zone group" in str(error)


def test_an_unknown_gpu_is_rejected(tmp_path):
    error = _broken_catalog(
        tmp_path, "instance_types.yaml", lambda d: d["instanceTypes"]["p5.4xlarge"].update(gpu="h300")
    )
    assert (
        str(error)
        == "catalog/instance_types.yaml: instanceTypes.p5.4xlarge.gpu: unknown GPU 'h300'; allowed: h100, h200, b200, gb200"
    )


def test_an_unknown_fabric_count_rule_is_rejected(tmp_path):
    error = _broken_catalog(tmp_path, "fabrics.yaml", lambda d: d["fabrics"]["efa"].update(count="two"))
    assert str(error).startswith(
        "catalog/fabrics.yaml: fabrics.efa.count: Input should be 'efa-per-gpu' or 'one-per-worker'"
    )
