"""AWS facts as data: GPU instance types, GPU product labels, fabric profiles and pinned add-ons.

`load_aws_catalog()` reads `catalog/instance_types.yaml`, `gpus.yaml`, `fabrics.yaml` and
`aws_platform.yaml`, validates them and stops the program with the file and key of a bad entry. Code
interprets this data; adding an instance type or a fabric is a data change.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional, Union

import pydantic

from serving_stack.errors import ConfigError
from serving_stack.facts.data import DATA_DIR, Data, load_model
from serving_stack.facts.gpus import Arch, Gpu, gpu_of_product, load_gpus

InterfaceType = Literal["interface", "efa-only"]
SOURCED_FIELDS = ("gpus", "gpuMemoryGB", "vcpus", "memoryGiB", "networkCards", "efaInterfaces", "nvmeDisks", "onDemandUsdPerHour")


class NetworkInterface(Data):
    networkCardIndex: int = pydantic.Field(ge=0)
    deviceIndex: int = pydantic.Field(ge=0)
    interfaceType: InterfaceType


class RuleLayout(Data):
    rule: Literal["efa-only-per-card"]


class ExplicitLayout(Data):
    interfaces: list[NetworkInterface] = pydantic.Field(min_length=1)


class InstanceType(Data):
    gpu: str
    gpus: int = pydantic.Field(gt=0)
    gpuMemoryGB: int = pydantic.Field(gt=0)
    vcpus: int = pydantic.Field(gt=0)
    memoryGiB: int = pydantic.Field(gt=0)
    networkCards: int = pydantic.Field(gt=0)
    efaVersion: Optional[int] = None
    efaInterfaces: int = pydantic.Field(ge=0)
    efaLayout: Optional[Union[RuleLayout, ExplicitLayout]] = None
    nvmeDisks: int = pydantic.Field(ge=0)
    nvmeDiskGB: int = pydantic.Field(ge=0)
    arch: Arch
    amiType: Literal["AL2023_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA"]
    onDemandUsdPerHour: Optional[float] = pydantic.Field(default=None, gt=0)
    capacityBlocksOnly: bool = False
    minKubernetes: Optional[str] = pydantic.Field(default=None, pattern=r"^1\.\d+$")
    sources: dict[str, str]

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> "InstanceType":
        missing = [f for f in SOURCED_FIELDS if f not in self.sources]
        if missing:
            raise ValueError(f"sources: no source for {', '.join(missing)}")
        if (self.arch == "arm64") != (self.amiType == "AL2023_ARM_64_NVIDIA"):
            raise ValueError(f"amiType {self.amiType} does not match arch {self.arch}")
        if self.efaInterfaces and self.efaInterfaces % self.gpus:
            raise ValueError(f"efaInterfaces {self.efaInterfaces} is not a multiple of gpus {self.gpus}")
        if bool(self.efaInterfaces) != (self.efaLayout is not None):
            raise ValueError("efaLayout is required exactly when efaInterfaces > 0")
        if self.efaLayout is not None:
            _check_layout(self.efa_layout(), self.networkCards, self.efaInterfaces)
        return self

    def efa_layout(self) -> list[NetworkInterface]:
        """The launch-template network interfaces that expose this type's EFA devices (EFA user guide)."""
        if isinstance(self.efaLayout, ExplicitLayout):
            return list(self.efaLayout.interfaces)
        if isinstance(self.efaLayout, RuleLayout):
            return [
                NetworkInterface(networkCardIndex=0, deviceIndex=0, interfaceType="interface"),
                NetworkInterface(networkCardIndex=0, deviceIndex=1, interfaceType="efa-only"),
                *(NetworkInterface(networkCardIndex=card, deviceIndex=0, interfaceType="efa-only") for card in range(1, self.networkCards)),
            ]
        return []

    @property
    def efa_per_gpu(self) -> int:
        return self.efaInterfaces // self.gpus


def _check_layout(layout: list[NetworkInterface], network_cards: int, efa_interfaces: int) -> None:
    primary = layout[0]
    if (primary.networkCardIndex, primary.deviceIndex, primary.interfaceType) != (0, 0, "interface"):
        raise ValueError("efaLayout: the first interface must be card 0 device 0 of type interface (an EFA-only one cannot be primary)")
    slots = [(i.networkCardIndex, i.deviceIndex) for i in layout]
    if len(set(slots)) != len(slots):
        raise ValueError("efaLayout: a (networkCardIndex, deviceIndex) pair is used twice")
    if any(card >= network_cards for card, _ in slots):
        raise ValueError(f"efaLayout: a networkCardIndex is beyond the {network_cards} network cards")
    if sum(i.interfaceType == "efa-only" for i in layout) < efa_interfaces:
        raise ValueError(f"efaLayout: fewer efa-only interfaces than efaInterfaces {efa_interfaces}")


class InstanceTypesFile(Data):
    schemaVersion: Literal[1]
    instanceTypes: dict[str, InstanceType] = pydantic.Field(min_length=1)


class EnvVar(Data):
    name: str = pydantic.Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    value: str


class FabricProfile(Data):
    source: str
    resource: str
    count: Literal["efa-per-gpu", "one-per-worker"]
    nixlBackends: Optional[list[str]] = None
    env: list[EnvVar]


class FabricsFile(Data):
    schemaVersion: Literal[1]
    fabrics: dict[Literal["efa", "ib"], FabricProfile]


class HelmChart(Data):
    repository: str
    chart: str
    version: str
    namespace: str


class RdmaSharedDevicePlugin(Data):
    image: str = pydantic.Field(pattern=r"^[a-z0-9./-]+:v?\d+\.\d+\.\d+$")
    namespace: str
    resourceName: str
    rdmaHcaMax: int = pydantic.Field(gt=0)
    vendors: list[str]


class DevicePluginPins(Data):
    nvidia: HelmChart
    efa: HelmChart
    rdmaSharedDevice: RdmaSharedDevicePlugin


class EksAddon(Data):
    name: str
    version: Optional[str] = None
    needsNodes: bool = False


class CsiAddon(Data):
    name: str
    version: Optional[str] = None
    serviceAccount: str


class EksAddons(Data):
    cluster: list[EksAddon]
    efsCsiDriver: CsiAddon
    fsxCsiDriver: CsiAddon


class AwsPlatformFile(Data):
    schemaVersion: Literal[1]
    devicePlugins: DevicePluginPins
    eksAddons: EksAddons
    nodeManagedPolicies: list[str] = pydantic.Field(min_length=1)


class AwsCatalog:
    """The four data files, cross-checked (every instance type names a known GPU)."""

    def __init__(self, instance_types: InstanceTypesFile, gpus: dict[str, Gpu], fabrics: FabricsFile,
                 platform: AwsPlatformFile):
        self.instance_types = instance_types.instanceTypes
        self.gpus = gpus
        self.fabrics = fabrics.fabrics
        self.platform = platform

    def gpu_of_product(self, product_label: str) -> Optional[str]:
        """`NVIDIA-H200` -> `h200` (the GPU whose known product labels include it)."""
        return gpu_of_product(self.gpus, product_label)


@functools.lru_cache(maxsize=4)
def load_aws_catalog(root: Path = DATA_DIR) -> AwsCatalog:
    catalog = AwsCatalog(
        load_model(root / "instance_types.yaml", InstanceTypesFile, root),
        load_gpus(root),
        load_model(root / "fabrics.yaml", FabricsFile, root),
        load_model(root / "aws_platform.yaml", AwsPlatformFile, root),
    )
    for name, instance in catalog.instance_types.items():
        if instance.gpu not in catalog.gpus:
            raise ConfigError(f"catalog/instance_types.yaml: instanceTypes.{name}.gpu", f"unknown GPU {instance.gpu!r}", ", ".join(catalog.gpus))
        if instance.gpuMemoryGB != catalog.gpus[instance.gpu].memoryGB:
            raise ConfigError(f"catalog/instance_types.yaml: instanceTypes.{name}.gpuMemoryGB",
                              f"{instance.gpuMemoryGB} GB, but catalog/gpus.yaml says {instance.gpu} has "
                              f"{catalog.gpus[instance.gpu].memoryGB} GB")
        required_arch = catalog.gpus[instance.gpu].arch
        if required_arch and instance.arch != required_arch:
            raise ConfigError(f"catalog/instance_types.yaml: instanceTypes.{name}.arch", f"{instance.gpu} hosts are {required_arch}")
    return catalog
