"""The preflight's data files (`tools/preflight/data/`): Service Quotas, cluster pieces, the AWS calls it
makes. Loaded with the project's strict reader into frozen models; a bad file stops with its key named."""

from __future__ import annotations

import datetime
import functools
import re
from pathlib import Path
from typing import Literal, Optional, TypeVar

import pydantic

from serving_stack.errors import ConfigError, from_validation_error
from serving_stack.facts.strict_files import Data, load_yaml_documents

DATA = Path(__file__).resolve().parent / "data"
LABEL = "tools/preflight/data"
Model = TypeVar("Model", bound=pydantic.BaseModel)
Purchase = Literal["on-demand", "spot"]


class Ec2Quota(Data):
    code: str = pydantic.Field(pattern=r"^L-[0-9A-F]{8}$")
    name: str
    purchase: Purchase
    families: str

    @pydantic.field_validator("families")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value)
        return value

    def covers(self, family: str) -> bool:
        return re.fullmatch(self.families, family) is not None


class Ec2Quotas(Data):
    serviceCode: str
    purchaseOptions: dict[str, Optional[Purchase]]
    quotas: tuple[Ec2Quota, ...]

    def quota_for(self, family: str, purchase: Purchase) -> Optional[Ec2Quota]:
        """The one quota of this purchase option that counts `family` (None when the data knows none)."""
        matches = [q for q in self.quotas if q.purchase == purchase and q.covers(family)]
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


def _load(path: Path, model: type[Model]) -> Model:
    label = f"{LABEL}/{path.name}"
    documents = load_yaml_documents(path, label, label)
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise ConfigError(label, "expected one YAML document (a mapping)")
    try:
        return model.model_validate(documents[0])
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, model, prefix=f"{label}: ") from None


@functools.cache
def load_quotas(root: Path = DATA) -> QuotasFile:
    return _load(root / "quotas.yaml", QuotasFile)


@functools.cache
def load_kubernetes(root: Path = DATA) -> KubernetesFile:
    return _load(root / "kubernetes.yaml", KubernetesFile)


@functools.cache
def load_permissions(root: Path = DATA) -> PermissionsFile:
    return _load(root / "permissions.yaml", PermissionsFile)
