"""AWS facts as data: GPU types, instance types, fabric profiles, Regions and zones, pinned platform software,
capacity prices and the autoscaling pins; adding an instance type, a GPU or a fabric is a data change.

`load_aws_catalog()` validates and cross-checks the files (every instance type's GPU, its Local Zone groups, the
device plugin and DRA driver pins it needs) and stops the program with the file and key of a bad entry. A GPU
product label no entry knows is a new GPU (`gpu_of_product` answers None, and the plan says to add it here).
Local Zones are kept apart from AZs: the EKS control plane gets AZ subnets only, and a Local Zone must be opted
in (its zone group) before anything launches there.
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Optional, Union

import pydantic

from serving_stack.errors import ConfigError
from serving_stack.facts.catalog import CATALOG_DIR
from serving_stack.facts.strict_files import DATA_DIR, Data, load_model
from serving_stack.names import CapacityType

Arch = Literal["x86_64", "arm64"]
GPUS_FILE = "gpus.yaml"


class Gpu(Data):
    productLabel: str = pydantic.Field(pattern=r"^NVIDIA-[A-Za-z0-9.-]+$")
    alternativeProductLabels: tuple[str, ...] = ()
    memoryGB: int = pydantic.Field(gt=0)
    arch: Optional[Arch] = None

    @property
    def product_labels(self) -> list[str]:
        return [self.productLabel, *self.alternativeProductLabels]


class GpusFile(Data):
    schemaVersion: Literal[1]
    gpus: dict[str, Gpu] = pydantic.Field(min_length=1)


def unknown_gpu_problem(product_label: str) -> str:
    """What to do about a product label no GPU entry knows (one wording for the plan and the absorb report)."""
    return (
        f"GPU product {product_label!r} is in no entry of catalog/{GPUS_FILE}: add the GPU there (productLabel, "
        "memoryGB, arch) and a node pool (or nodeFacts) that has it"
    )


@functools.lru_cache(maxsize=4)
def load_gpus(root: Path = DATA_DIR) -> dict[str, Gpu]:
    data = load_model(root / GPUS_FILE, GpusFile, root)
    owners: dict[str, str] = {}
    for name, gpu in data.gpus.items():
        for label in gpu.product_labels:
            if label in owners:
                raise ConfigError(
                    f"catalog/{GPUS_FILE}: gpus.{name}", f"product label {label!r} is also {owners[label]}'s"
                )
            owners[label] = name
    return dict(data.gpus)


FILE = "aws_regions.yaml"


class LocalZone(Data):
    group: str = pydantic.Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d-[a-z]{3}-\d$")
    location: str


class Region(Data):
    availabilityZones: list[str] = pydantic.Field(min_length=2)
    localZones: dict[str, LocalZone] = pydantic.Field(default_factory=dict)


class AwsRegions(Data):
    """Zone lookups by name; every name checked to belong to its Region when the file is loaded."""

    schemaVersion: Literal[1]
    sources: dict[Literal["regions", "availabilityZones", "localZones"], str]
    regions: dict[str, Region] = pydantic.Field(min_length=1)

    def availability_zones(self, region: str) -> list[str]:
        return list(self.regions[region].availabilityZones) if region in self.regions else []

    def local_zone(self, region: str, zone: str) -> Optional[LocalZone]:
        return self.regions[region].localZones.get(zone) if region in self.regions else None

    def local_zones(self, region: str, groups: Optional[Collection[str]] = None) -> list[str]:
        """Local Zone names of the Region (of these zone groups only, when given)."""
        zones = self.regions[region].localZones if region in self.regions else {}
        return [name for name, zone in zones.items() if groups is None or zone.group in groups]


def _check(data: AwsRegions, label: str) -> None:
    for code, region in data.regions.items():
        for index, zone in enumerate(region.availabilityZones):
            if not (zone.startswith(code) and len(zone) == len(code) + 1 and zone[-1].isalpha()):
                raise ConfigError(
                    f"{label}: regions.{code}.availabilityZones[{index}]",
                    f"{zone!r} is not an AZ name of {code} (the Region code and one letter)",
                )
        for zone, local in region.localZones.items():
            if not (local.group.startswith(f"{code}-") and zone.startswith(local.group) and zone[-1].isalpha()):
                raise ConfigError(
                    f"{label}: regions.{code}.localZones.{zone}",
                    f"a Local Zone of {code} is named <zone group><letter>, got group {local.group!r}",
                )


@functools.lru_cache(maxsize=4)
def load_aws_regions(root: Path = DATA_DIR) -> AwsRegions:
    data = load_model(root / FILE, AwsRegions, root)
    _check(data, f"catalog/{FILE}")
    return data


VERSION = r"^v?\d+\.\d+\.\d+$"
KubernetesMinor = Annotated[str, pydantic.StringConstraints(pattern=r"^1\.\d+$")]  # such as 1.35


def version_key(version: str) -> tuple[int, ...]:
    """`v0.5.30` -> (0, 5, 30): chart versions compared as numbers (`0.5.9` < `0.5.14`)."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


class Chart(Data):
    repository: str = pydantic.Field(pattern=r"^https://")
    chart: str
    version: str = pydantic.Field(pattern=r"^\d+\.\d+\.\d+$")
    namespace: str


class HelmChart(Chart):
    version: str = pydantic.Field(pattern=VERSION)
    source: str = pydantic.Field(min_length=1)


class NvidiaDevicePluginChart(HelmChart):
    architectures: list[Arch] = pydantic.Field(min_length=1)


class EfaDevicePluginChart(HelmChart):
    """`supportedInstanceTypes`: the chart's own instance list (its DaemonSet's node affinity)."""

    appVersion: str = pydantic.Field(pattern=VERSION)
    supportedInstanceTypes: list[str] = pydantic.Field(min_length=1)


class DraDriverChart(HelmChart):
    minKubernetes: KubernetesMinor


class RdmaSharedDevicePlugin(Data):
    image: str = pydantic.Field(pattern=r"^[a-z0-9./-]+:v?\d+\.\d+\.\d+$")
    namespace: str
    resourceName: str
    rdmaHcaMax: int = pydantic.Field(gt=0)
    vendors: list[str]


class DevicePluginPins(Data):
    nvidia: NvidiaDevicePluginChart
    efa: EfaDevicePluginChart
    rdmaSharedDevice: RdmaSharedDevicePlugin


class EksAddon(Data):
    """`configuration`: the add-on's configuration values (its JSON schema: aws eks
    describe-addon-configuration); strings, as the schemas type them."""

    name: str
    version: Optional[str] = None
    needsNodes: bool = False
    configuration: dict[str, str] = pydantic.Field(default_factory=dict)


class CsiAddon(Data):
    name: str
    version: Optional[str] = None
    serviceAccount: str


class EksAddons(Data):
    cluster: list[EksAddon]
    efsCsiDriver: CsiAddon
    fsxCsiDriver: CsiAddon


class ImageDelivery(Data):
    """How a node of one EKS AMI type gets its images fastest without a prepared snapshot."""

    fastImagePull: bool
    source: str = pydantic.Field(min_length=10)


class AwsPlatformFile(Data):
    schemaVersion: Literal[1]
    devicePlugins: DevicePluginPins
    draDriver: DraDriverChart
    eksAddons: EksAddons
    imageDelivery: dict[str, ImageDelivery]
    nodeManagedPolicies: list[str] = pydantic.Field(min_length=1)


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
    minKubernetes: Optional[KubernetesMinor] = None
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


@dataclass(frozen=True)
class AwsCatalog:
    """The five data files, cross-checked (`_check_instance`)."""

    instance_types: dict[str, InstanceType]
    gpus: dict[str, Gpu]
    fabrics: dict[Literal["efa", "ib"], FabricProfile]
    platform: AwsPlatformFile
    regions: AwsRegions

    def gpu_of_product(self, product_label: str) -> Optional[str]:
        """`NVIDIA-H200` -> `h200` (the GPU whose known product labels include it), None for an unknown label."""
        return next((name for name, gpu in self.gpus.items() if product_label in gpu.product_labels), None)


def _check_instance(catalog: AwsCatalog, name: str, instance: InstanceType) -> None:
    """What the other files must hold for this instance type: its GPU, its Local Zone groups, the pins."""
    key = f"catalog/instance_types.yaml: instanceTypes.{name}"
    pins, dra = catalog.platform.devicePlugins, catalog.platform.draDriver
    groups = {z.group for r in catalog.regions.regions.values() for z in r.localZones.values()}
    if instance.gpu not in catalog.gpus:
        raise ConfigError(f"{key}.gpu", f"unknown GPU {instance.gpu!r}", ", ".join(catalog.gpus))
    if instance.gpuMemoryGB != catalog.gpus[instance.gpu].memoryGB:
        raise ConfigError(
            f"{key}.gpuMemoryGB",
            f"{instance.gpuMemoryGB} GB, but catalog/gpus.yaml says "
            f"{instance.gpu} has {catalog.gpus[instance.gpu].memoryGB} GB",
        )
    if instance.amiType not in catalog.platform.imageDelivery:
        raise ConfigError(f"{key}.amiType", f"{instance.amiType} has no catalog/aws_platform.yaml imageDelivery entry")
    required_arch = catalog.gpus[instance.gpu].arch
    if required_arch and instance.arch != required_arch:
        raise ConfigError(f"{key}.arch", f"{instance.gpu} hosts are {required_arch}")
    unknown = [g for g in instance.localZoneGroups if g not in groups]
    if unknown:
        raise ConfigError(
            f"{key}.localZoneGroups", f"{unknown[0]!r} is not a Local Zone group of catalog/aws_regions.yaml"
        )
    if instance.arch not in pins.nvidia.architectures:
        raise ConfigError(f"{key}.arch", f"the pinned NVIDIA device plugin runs on {pins.nvidia.architectures} only")
    if instance.efaInterfaces and name not in pins.efa.supportedInstanceTypes:
        raise ConfigError(
            f"{key}",
            f"the pinned EFA device plugin chart {pins.efa.version} does not list it "
            "(catalog/aws_platform.yaml devicePlugins.efa.supportedInstanceTypes)",
        )
    minimum = instance.minEfaDevicePlugin
    if minimum and min(version_key(pins.efa.version), version_key(pins.efa.appVersion)) < version_key(minimum):
        raise ConfigError(
            f"{key}.minEfaDevicePlugin",
            f"needs the EFA device plugin {minimum}+, pinned chart {pins.efa.version} (plugin {pins.efa.appVersion})",
        )
    if instance.computeDomains and version_key(instance.minKubernetes or "0.0") < version_key(dra.minKubernetes):
        raise ConfigError(
            f"{key}.minKubernetes", f"the pinned DRA driver {dra.version} needs Kubernetes >= {dra.minKubernetes}"
        )


@functools.lru_cache(maxsize=4)
def load_aws_catalog(root: Path = DATA_DIR) -> AwsCatalog:
    catalog = AwsCatalog(
        load_model(root / "instance_types.yaml", InstanceTypesFile, root).instanceTypes,
        load_gpus(root),
        load_model(root / "fabrics.yaml", FabricsFile, root).fabrics,
        load_model(root / "aws_platform.yaml", AwsPlatformFile, root),
        load_aws_regions(root),
    )
    for name, instance in catalog.instance_types.items():
        _check_instance(catalog, name, instance)
    return catalog


class SourcedPrice(Data):
    usdPerHour: float = pydantic.Field(gt=0)
    region: str
    asOf: str
    reviewBy: datetime.date = pydantic.Field(description="the day the price is stale: re-read the source")
    source: str = pydantic.Field(min_length=20)


class CapacityPricesFile(Data):
    schemaVersion: Literal[1]
    capacityBlock: dict[str, SourcedPrice] = pydantic.Field(default_factory=dict)

    def current_capacity_blocks(self, today: datetime.date) -> dict[str, SourcedPrice]:
        """The prices still usable on `today`: one past its `reviewBy` has ended and prices nothing."""
        return {name: price for name, price in self.capacityBlock.items() if today < price.reviewBy}

    def ended_capacity_blocks(self, today: datetime.date) -> tuple[str, ...]:
        """One line per ended price, for the reports that leave it out (the summary, `make plan`)."""
        return tuple(
            f"{name} capacity-block ${price.usdPerHour}/h (as of {price.asOf}) ended {price.reviewBy}: not used"
            for name, price in sorted(self.capacityBlock.items())
            if today >= price.reviewBy
        )


@functools.lru_cache(maxsize=4)
def load_capacity_prices(root: Path = CATALOG_DIR) -> CapacityPricesFile:
    return load_model(root / "capacity_prices.yaml", CapacityPricesFile, root)


class ClusterAutoscalerChart(Chart):
    imageTag: str = pydantic.Field(pattern=r"^v\d+\.\d+\.\d+$")
    minKubernetes: str
    serviceAccount: str


# The operator's scaling adapter (a scale subresource per DGD service) that KEDA scales.
class ScalingAdapter(Data):
    apiVersion: Literal["nvidia.com/v1alpha1"]
    kind: Literal["DynamoGraphDeploymentScalingAdapter"]
    source: str


class Metrics(Data):
    selectorLabel: str
    queueDepth: str = pydantic.Field(pattern=r"\$SELECTOR")
    inflightRequests: str = pydantic.Field(pattern=r"\$SELECTOR")
    ttftP50Seconds: str = pydantic.Field(pattern=r"\$SELECTOR")

    def for_dgd(self, namespace: str, dgd_name: str) -> Metrics:
        """The queries of one graph's series."""
        selector = f'{self.selectorLabel}="{namespace}-{dgd_name}"'
        queries = ("queueDepth", "inflightRequests", "ttftP50Seconds")
        return self.model_copy(update={q: getattr(self, q).replace("$SELECTOR", selector) for q in queries})


class AutoscalingFile(Data):
    schemaVersion: Literal[1]
    keda: Chart
    clusterAutoscaler: ClusterAutoscalerChart
    scalingAdapter: ScalingAdapter
    metrics: Metrics


@functools.lru_cache(maxsize=4)
def load_autoscaling(root: Path = CATALOG_DIR) -> AutoscalingFile:
    return load_model(root / "autoscaling.yaml", AutoscalingFile, root)
