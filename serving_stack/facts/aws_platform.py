"""External software the AWS side installs, pinned (`catalog/aws_platform.yaml`): device plugins, the NVIDIA
DRA driver, EKS add-ons and the node role's managed policies. Every chart pin names its source, and what a
pin must support (instance types, architectures) is data the instance facts are checked against."""

from __future__ import annotations

import re
from typing import Literal, Optional

import pydantic

from serving_stack.facts.data import Data

Arch = Literal["x86_64", "arm64"]
VERSION = r"^v?\d+\.\d+\.\d+$"


def version_key(version: str) -> tuple[int, ...]:
    """`v0.5.30` -> (0, 5, 30): chart versions compared as numbers (`0.5.9` < `0.5.14`)."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


class HelmChart(Data):
    repository: str
    chart: str
    version: str = pydantic.Field(pattern=VERSION)
    namespace: str
    source: str = pydantic.Field(min_length=1)


class NvidiaDevicePluginChart(HelmChart):
    architectures: list[Arch] = pydantic.Field(min_length=1)


class EfaDevicePluginChart(HelmChart):
    """`supportedInstanceTypes`: the chart's own instance list (its DaemonSet's node affinity)."""

    appVersion: str = pydantic.Field(pattern=VERSION)
    supportedInstanceTypes: list[str] = pydantic.Field(min_length=1)


class DraDriverChart(HelmChart):
    minKubernetes: str = pydantic.Field(pattern=r"^1\.\d+$")


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


class AwsPlatformFile(Data):
    schemaVersion: Literal[1]
    devicePlugins: DevicePluginPins
    draDriver: DraDriverChart
    eksAddons: EksAddons
    nodeManagedPolicies: list[str] = pydantic.Field(min_length=1)
