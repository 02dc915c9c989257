"""AWS facts as data: GPU instance types, GPU product labels, fabric profiles, pinned add-ons, zones.

`load_aws_catalog()` reads `catalog/instance_types.yaml`, `gpus.yaml`, `fabrics.yaml`, `aws_platform.yaml`
and `aws_regions.yaml`, validates them, cross-checks them (every instance type's GPU, its Local Zone
groups, the device plugin and DRA driver pins it needs) and stops the program with the file and key of a
bad entry. Code interprets this data; adding an instance type or a fabric is a data change.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, Optional, Union

import pydantic

from serving_stack.errors import ConfigError
from serving_stack.facts.aws_platform import Arch, AwsPlatformFile, version_key
from serving_stack.facts.data import DATA_DIR, Data, load_model
from serving_stack.facts.gpus import Gpu, gpu_of_product, load_gpus
from serving_stack.facts.regions import AwsRegions, load_aws_regions
from serving_stack.names import CapacityType

InterfaceType = Literal["interface", "efa-only"]
SOURCED_FIELDS = (
    "gpus",
    "gpuMemoryGB",
    "vcpus",
    "memoryGiB",
    "networkCards",
    "efaInterfaces",
    "nvmeDisks",
    "onDemandUsdPerHour",
    "capacityTypes",
)


class NetworkInterface(Data):
    networkCardIndex: int = pydantic.Field(ge=0)
    deviceIndex: int = pydantic.Field(ge=0)
    interfaceType: InterfaceType


class RuleLayout(Data):
    rule: Literal["efa-only-per-card"]


class ExplicitLayout(Data):
    """`contested`: set when no primary source (AWS's EC2 documentation) backs the layout; says what
    contradicts it. The render warns for every pool of the type."""

    interfaces: list[NetworkInterface] = pydantic.Field(min_length=1)
    contested: Optional[str] = pydantic.Field(default=None, min_length=1)


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
    capacityTypes: list[CapacityType] = pydantic.Field(min_length=1)
    zoneType: Literal["availability-zone", "local-zone"]
    localZoneGroups: list[str]
    computeDomains: bool
    minEfaDevicePlugin: Optional[str] = pydantic.Field(default=None, pattern=r"^v?\d+\.\d+\.\d+$")
    minKubernetes: Optional[str] = pydantic.Field(default=None, pattern=r"^1\.\d+$")
    sources: dict[str, str]

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> InstanceType:
        sourced = [
            *SOURCED_FIELDS,
            *(["zoneType"] if self.zoneType == "local-zone" else []),
            *(["computeDomains"] if self.computeDomains else []),
            *(f for f in ("minEfaDevicePlugin", "minKubernetes") if getattr(self, f) is not None),
        ]
        missing = [f for f in sourced if f not in self.sources]
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
        if (self.zoneType == "local-zone") != bool(self.localZoneGroups):
            raise ValueError("localZoneGroups are listed exactly when zoneType is local-zone")
        return self

    @property
    def contested_layout(self) -> Optional[str]:
        return self.efaLayout.contested if isinstance(self.efaLayout, ExplicitLayout) else None

    @property
    def local_zones_only(self) -> bool:
        return self.zoneType == "local-zone"

    def efa_layout(self) -> list[NetworkInterface]:
        """The launch-template network interfaces that expose this type's EFA devices (EFA user guide)."""
        if isinstance(self.efaLayout, ExplicitLayout):
            return list(self.efaLayout.interfaces)
        if isinstance(self.efaLayout, RuleLayout):
            return [
                NetworkInterface(networkCardIndex=0, deviceIndex=0, interfaceType="interface"),
                NetworkInterface(networkCardIndex=0, deviceIndex=1, interfaceType="efa-only"),
                *(
                    NetworkInterface(networkCardIndex=card, deviceIndex=0, interfaceType="efa-only")
                    for card in range(1, self.networkCards)
                ),
            ]
        return []

    @property
    def efa_per_gpu(self) -> int:
        return self.efaInterfaces // self.gpus


def _check_layout(layout: list[NetworkInterface], network_cards: int, efa_interfaces: int) -> None:
    primary = layout[0]
    if (primary.networkCardIndex, primary.deviceIndex, primary.interfaceType) != (0, 0, "interface"):
        raise ValueError(
            "efaLayout: the first interface must be card 0 device 0 of type interface "
            "(an EFA-only one cannot be primary)"
        )
    slots = [(i.networkCardIndex, i.deviceIndex) for i in layout]
    if len(set(slots)) != len(slots):
        raise ValueError("efaLayout: a (networkCardIndex, deviceIndex) pair is used twice")
    if any(card >= network_cards for card, _ in slots):
        raise ValueError(f"efaLayout: a networkCardIndex is beyond the {network_cards} network cards")
    efa_only = sum(i.interfaceType == "efa-only" for i in layout)
    if efa_only != efa_interfaces:
        # Each efa-only interface is one `vpc.amazonaws.com/efa` device: count, label and requests must agree.
        raise ValueError(f"efaLayout: {efa_only} efa-only interfaces, but efaInterfaces is {efa_interfaces}")


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


class AwsCatalog:
    """The five data files, cross-checked (`_check_instance`)."""

    def __init__(
        self,
        instance_types: InstanceTypesFile,
        gpus: dict[str, Gpu],
        fabrics: FabricsFile,
        platform: AwsPlatformFile,
        regions: AwsRegions,
    ):
        self.instance_types = instance_types.instanceTypes
        self.gpus = gpus
        self.fabrics = fabrics.fabrics
        self.platform = platform
        self.regions = regions

    def gpu_of_product(self, product_label: str) -> Optional[str]:
        """`NVIDIA-H200` -> `h200` (the GPU whose known product labels include it)."""
        return gpu_of_product(self.gpus, product_label)


def _check_instance(catalog: AwsCatalog, name: str, instance: InstanceType) -> Optional[ConfigError]:
    """What the other files must hold for this instance type: its GPU, its Local Zone groups, the pins."""
    key = f"catalog/instance_types.yaml: instanceTypes.{name}"
    pins, dra = catalog.platform.devicePlugins, catalog.platform.draDriver
    groups = {z.group for r in catalog.regions.regions.values() for z in r.localZones.values()}
    if instance.gpu not in catalog.gpus:
        return ConfigError(f"{key}.gpu", f"unknown GPU {instance.gpu!r}", ", ".join(catalog.gpus))
    if instance.gpuMemoryGB != catalog.gpus[instance.gpu].memoryGB:
        return ConfigError(
            f"{key}.gpuMemoryGB",
            f"{instance.gpuMemoryGB} GB, but catalog/gpus.yaml says "
            f"{instance.gpu} has {catalog.gpus[instance.gpu].memoryGB} GB",
        )
    required_arch = catalog.gpus[instance.gpu].arch
    if required_arch and instance.arch != required_arch:
        return ConfigError(f"{key}.arch", f"{instance.gpu} hosts are {required_arch}")
    unknown = [g for g in instance.localZoneGroups if g not in groups]
    if unknown:
        return ConfigError(
            f"{key}.localZoneGroups", f"{unknown[0]!r} is not a Local Zone group of catalog/aws_regions.yaml"
        )
    if instance.arch not in pins.nvidia.architectures:
        return ConfigError(f"{key}.arch", f"the pinned NVIDIA device plugin runs on {pins.nvidia.architectures} only")
    if instance.efaInterfaces and name not in pins.efa.supportedInstanceTypes:
        return ConfigError(
            f"{key}",
            f"the pinned EFA device plugin chart {pins.efa.version} does not list it "
            "(catalog/aws_platform.yaml devicePlugins.efa.supportedInstanceTypes)",
        )
    minimum = instance.minEfaDevicePlugin
    if minimum and min(version_key(pins.efa.version), version_key(pins.efa.appVersion)) < version_key(minimum):
        return ConfigError(
            f"{key}.minEfaDevicePlugin",
            f"needs the EFA device plugin {minimum}+, pinned chart {pins.efa.version} (plugin {pins.efa.appVersion})",
        )
    if instance.computeDomains and version_key(instance.minKubernetes or "0.0") < version_key(dra.minKubernetes):
        return ConfigError(
            f"{key}.minKubernetes", f"the pinned DRA driver {dra.version} needs Kubernetes >= {dra.minKubernetes}"
        )
    return None


@functools.lru_cache(maxsize=4)
def load_aws_catalog(root: Path = DATA_DIR) -> AwsCatalog:
    catalog = AwsCatalog(
        load_model(root / "instance_types.yaml", InstanceTypesFile, root),
        load_gpus(root),
        load_model(root / "fabrics.yaml", FabricsFile, root),
        load_model(root / "aws_platform.yaml", AwsPlatformFile, root),
        load_aws_regions(root),
    )
    for name, instance in catalog.instance_types.items():
        error = _check_instance(catalog, name, instance)
        if error:
            raise error
    return catalog
