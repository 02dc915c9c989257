"""The preflight's data files (`tools/preflight/data/`): Service Quotas, cluster pieces, the AWS calls it
makes. Loaded with the project's strict reader into frozen models; a bad file stops with its key named."""

from __future__ import annotations

import datetime
import functools
import re
from pathlib import Path
from typing import Literal, Optional, TypeVar

import pydantic

from serving_stack.errors import ConfigError
from serving_stack.facts.strict_files import Data, check_shape, load_yaml_documents

DATA = Path(__file__).resolve().parent / "data"
Model = TypeVar("Model", bound=pydantic.BaseModel)
Purchase = Literal["on-demand", "spot"]


class Ec2Quota(Data):
    code: str = pydantic.Field(pattern=r"^L-[0-9A-F]{8}$")
    name: str
    purchase: Purchase
    families: re.Pattern[str]  # must match the whole family


class Ec2Quotas(Data):
    serviceCode: str
    purchaseOptions: dict[str, Optional[Purchase]]
    quotas: tuple[Ec2Quota, ...]

    def quota_for(self, family: str, purchase: Purchase) -> Optional[Ec2Quota]:
        """The one quota of this purchase option that counts `family` (None when the data knows none)."""
        matches = [q for q in self.quotas if q.purchase == purchase and q.families.fullmatch(family)]
        if len(matches) > 1:
            raise ValueError(f"family {family} matches {len(matches)} {purchase} quotas in quotas.yaml")
        return matches[0] if matches else None


class SageMakerQuotas(Data):
    serviceCode: str
    endpointQuotaName: str
    source: str

    def endpoint_quota_name(self, instance_type: str) -> str:
        return self.endpointQuotaName.format(instanceType=instance_type)


class QuotasFile(Data):
    schemaVersion: Literal[1]
    read: datetime.date
    ec2: Ec2Quotas
    sagemaker: SageMakerQuotas


class Provisioners(Data):
    readWriteMany: dict[str, str]
    readWriteOnceOnly: dict[str, str]


class GroupKey(Data):
    key: str
    fix: str


class ExtendedResource(Data):
    advertisedBy: str
    source: str


class KubernetesFile(Data):
    schemaVersion: Literal[1]
    read: datetime.date
    provisioners: Provisioners
    chartGroups: dict[str, tuple[str, ...]]
    groupKeys: dict[str, GroupKey]
    extendedResources: dict[str, ExtendedResource]


class AwsCall(Data):
    service: str
    operation: str
    action: str
    why: str


class PermissionsFile(Data):
    schemaVersion: Literal[1]
    calls: tuple[AwsCall, ...]


def _load(name: str, model: type[Model], root: Path) -> Model:
    label = f"tools/preflight/data/{name}"
    documents = load_yaml_documents(root / name, label)
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise ConfigError(label, "expected one YAML document (a mapping)")
    return check_shape(documents[0], model, f"{label}: ")


@functools.cache
def load_quotas(root: Path = DATA) -> QuotasFile:
    return _load("quotas.yaml", QuotasFile, root)


@functools.cache
def load_kubernetes(root: Path = DATA) -> KubernetesFile:
    return _load("kubernetes.yaml", KubernetesFile, root)


@functools.cache
def load_permissions(root: Path = DATA) -> PermissionsFile:
    return _load("permissions.yaml", PermissionsFile, root)
