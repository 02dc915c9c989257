"""What each runtime's response parsers make of the model's output, as data: `catalog/response_formats.yaml`.

Read by `serving_stack.plan.failover` (does a fallback pair answer alike?) and checked against the parsers
themselves by `tests/test_failover_parsers.py`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.facts.durations import Sourced
from serving_stack.facts.strict_files import PROJECT_DATA_DIR, Data, load_model


class ModelOutput(Sourced):
    model: str
    toolCallMarkup: str
    reasoningMarkup: str
    format: str


class GatewayFields(Sourced):
    litellmVersion: str
    reasoningField: dict[str, str]


class MaxContext(Sourced):
    arguments: tuple[str, ...]
    engineConfigKeys: tuple[str, ...]


class ToolCallAnswer(Sourced):
    markup: str
    arguments: Literal["json-object"]
    valueTypes: Literal["request-schema", "strings"]
    stringValues: Literal["as-written", "trimmed-html-unescaped"]
    textBeforeCalls: Literal["content"]


class ReasoningAnswer(Sourced):
    markup: str
    thinkingOff: Literal["content", "frontend-prompt-check"]
    field: str


class Runtime(Data):
    name: str
    versions: tuple[str, ...] = pydantic.Field(min_length=1)
    probe: bool
    release: str
    note: Optional[str] = None
    toolCallParsers: dict[str, ToolCallAnswer]
    reasoningParsers: dict[str, ReasoningAnswer]


class ResponseFormats(Data):
    schemaVersion: Literal[1]
    modelOutput: ModelOutput
    gateway: GatewayFields
    maxContext: MaxContext
    runtimes: tuple[Runtime, ...]

    @property
    def by_name(self) -> Mapping[str, Runtime]:
        return {runtime.name: runtime for runtime in self.runtimes}

    @pydantic.model_validator(mode="after")
    def _one_entry_per_runtime(self) -> ResponseFormats:
        names = [runtime.name for runtime in self.runtimes]
        if len(set(names)) != len(names):
            raise ValueError(f"a runtime is listed twice: {names}")
        return self


@functools.cache
def load_response_formats(root: Path = PROJECT_DATA_DIR) -> ResponseFormats:
    return load_model(root / "response_formats.yaml", ResponseFormats, root)
