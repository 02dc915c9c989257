"""docs/aws.md ("GPU instance types") has a row per catalog instance type that says what the data says: capacity options, EFA
devices, AMI, the device plugins (and driver) its pools get, and its prerequisites. Rows are built here from
the data, so a data change without a docs change fails (print them with `python tests/test_aws_docs.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving_stack.facts.aws import InstanceType, load_aws_catalog

DOC = Path(__file__).resolve().parent.parent / "docs" / "aws.md"
CATALOG = load_aws_catalog()


def plugins(instance: InstanceType) -> str:
    pins, dra = CATALOG.platform.devicePlugins, CATALOG.platform.draDriver
    names = [f"{pins.nvidia.chart} {pins.nvidia.version}"]
    if instance.efaInterfaces:
        minimum = f" (needs >= {instance.minEfaDevicePlugin})" if instance.minEfaDevicePlugin else ""
        names.append(f"{pins.efa.chart} {pins.efa.version}{minimum}")
    if instance.computeDomains:
        names.append(f"{dra.chart} {dra.version} (ComputeDomains)")
    return ", ".join(names)


def prerequisites(instance: InstanceType) -> str:
    needs = [f"opt in to Local Zone group `{group}`" for group in instance.localZoneGroups]
    if instance.minKubernetes:
        needs.append(f"Kubernetes >= {instance.minKubernetes}")
    if "capacity-block" in instance.capacityTypes:
        needs.append("a Capacity Block upgrades at size 0")
    return "; ".join(needs) or "none"


def row(name: str, instance: InstanceType) -> str:
    return (
        f"| `{name}` | {instance.gpus}x {instance.gpu} | {', '.join(instance.capacityTypes)} | "
        f"{instance.efaInterfaces} ({instance.efa_per_gpu} per GPU) | `{instance.amiType}` | {plugins(instance)} | "
        f"{prerequisites(instance)} |"
    )


@pytest.mark.parametrize("name", sorted(CATALOG.instance_types))
def test_the_doc_has_the_row_of_each_instance_type(name):
    assert row(name, CATALOG.instance_types[name]) in DOC.read_text().splitlines()


if __name__ == "__main__":
    for instance_type, facts in CATALOG.instance_types.items():
        print(row(instance_type, facts))
