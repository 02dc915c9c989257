"""Gateway pins as data: `catalog/gateway.yaml` (LiteLLM and Redis images, users, sizes, sources)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

import pydantic
import yaml

CATALOG_FILE = Path(__file__).resolve().parents[2] / "catalog" / "gateway.yaml"


class _Data(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class Resources(_Data):
    requests: dict[str, str]
    limits: dict[str, str]


class LiteLLMPin(_Data):
    image: str
    version: str
    port: int = pydantic.Field(gt=0, lt=65536)
    runAsUser: int = pydantic.Field(gt=0)
    writablePaths: tuple[str, ...]
    resources: Resources
    sources: dict[str, str]


class RedisPin(_Data):
    image: str
    port: int = pydantic.Field(gt=0, lt=65536)
    runAsUser: int = pydantic.Field(gt=0)
    maxMemory: str
    resources: Resources
    sources: dict[str, str]


class GatewayPins(_Data):
    schemaVersion: int
    litellm: LiteLLMPin
    redis: RedisPin


@functools.cache
def load_gateway_pins(path: Optional[Path] = None) -> GatewayPins:
    return GatewayPins.model_validate(yaml.safe_load((path or CATALOG_FILE).read_text()))
