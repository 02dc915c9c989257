"""Values that only stand in for real ones (`catalog/placeholders.yaml`): documentation address ranges and
domains, AWS's example account ids and the bucket-name prefix S3 reserves for documentation."""

from __future__ import annotations

import functools
import ipaddress
from pathlib import Path
from typing import Literal

import pydantic

from serving_stack.facts.strict_files import DATA_DIR, Data, load_model


class DocumentationNetwork(Data):
    cidr: str
    source: str = pydantic.Field(min_length=1)

    @pydantic.field_validator("cidr")
    @classmethod
    def _network(cls, cidr: str) -> str:
        ipaddress.ip_network(cidr)  # a ValueError is the validation error
        return cidr


class ExampleAccount(Data):
    id: str = pydantic.Field(pattern=r"^\d{12}$")
    source: str = pydantic.Field(min_length=1)


class ExampleBucketPrefix(Data):
    prefix: str = pydantic.Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    source: str = pydantic.Field(min_length=1)


class ExampleDomain(Data):
    domain: str = pydantic.Field(pattern=r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")
    source: str = pydantic.Field(min_length=1)


class PlaceholderFacts(Data):
    schemaVersion: Literal[1]
    documentationNetworks: tuple[DocumentationNetwork, ...]
    exampleAccounts: tuple[ExampleAccount, ...]
    exampleBucketPrefixes: tuple[ExampleBucketPrefix, ...]
    exampleDomains: tuple[ExampleDomain, ...]


@functools.lru_cache(maxsize=4)
def load_placeholder_facts(root: Path = DATA_DIR) -> PlaceholderFacts:
    return load_model(root / "placeholders.yaml", PlaceholderFacts, root)
