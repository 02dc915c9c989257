"""Gateway pins as data: `catalog/gateway.yaml` (LiteLLM and Redis images, users, sizes, sources)."""

from __future__ import annotations

import functools
from pathlib import Path

import pydantic

from serving_stack.facts.strict_files import DATA_DIR, Data, load_model


class Resources(Data):
    requests: dict[str, str]
    limits: dict[str, str]


class ContainerPin(Data):
    image: str
    port: int = pydantic.Field(gt=0, lt=65536)
    runAsUser: int = pydantic.Field(gt=0)
    resources: Resources
    sources: dict[str, str]


class LiteLLMPin(ContainerPin):
    version: str
    writablePaths: tuple[str, ...]


class RedisPin(ContainerPin):
    maxMemory: str


class GatewayPins(Data):
    schemaVersion: int
    litellm: LiteLLMPin
    redis: RedisPin


@functools.cache
def load_gateway_pins(root: Path = DATA_DIR) -> GatewayPins:
    return load_model(root / "gateway.yaml", GatewayPins, root)
