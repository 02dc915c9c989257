"""One catalog target: its `targets.yaml` entry and its upstream ConfigMap + DynamoGraphDeployment.

What a target *is* (components, GPUs, checkpoints, speculative decoding, routing) is read from the
manifest; the entry adds only what the manifest cannot say: the published performance, which may be
unknown (a new target, a GPU upstream has not benchmarked yet).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Annotated, Any, Optional

import pydantic
import yaml

from serving_stack.facts.data import Data
from serving_stack.names import GPU_PRODUCT_LABEL, GPU_RESOURCE, WORKER_COMPONENT_TYPES

UNKNOWN = "unknown"
# Upstream's speculative-decoding method names (vLLM `method`, TRT-LLM `decoding_type`) as the
# performance table spells them; a method not listed keeps upstream's spelling.
SPECULATIVE_METHODS = {"mtp": "MTP", "dflash": "DFlash", "dspark": "DSpark", "eagle": "Eagle", "eagle3": "Eagle3"}
NO_SPECULATION = "none"


def _unknown_as_none(value: Any) -> Any:
    return None if value == UNKNOWN else value


def _routing(value: str) -> str:
    if not re.fullmatch(r"single|kv|\d+P\d+D", value):
        raise ValueError("must be single, kv or <prefill>P<decode>D such as 1P1D")
    return value


PositiveInt = Annotated[Optional[Annotated[int, pydantic.Field(gt=0)]], pydantic.BeforeValidator(_unknown_as_none)]
PositiveFloat = Annotated[Optional[Annotated[float, pydantic.Field(gt=0)]], pydantic.BeforeValidator(_unknown_as_none)]


class Performance(Data):
    """One row of the published table; each figure a positive number or `unknown` (read as None)."""

    concurrency: PositiveInt
    ttftP50Ms: PositiveFloat
    outputTokensPerSecondPerGpu: PositiveFloat
    tokensPerSecondPerUser: PositiveFloat

    @property
    def published(self) -> bool:
        return any(v is not None for v in self.model_dump().values())


class TargetEntry(Data):
    id: str = pydantic.Field(pattern=r"^[a-z0-9-]+/[a-z0-9.-]+$")
    manifest: str
    speculativeDecoding: str = pydantic.Field(pattern=r"^[A-Za-z0-9_-]+$")
    routing: Annotated[str, pydantic.AfterValidator(_routing)]
    performance: Performance


def speculative_configs(config_map: dict[str, Any]) -> list[dict[str, Any]]:
    """The speculative config each engine runs with: vLLM's JSON key, TRT-LLM's engine YAML section."""
    configs: list[dict[str, Any]] = []
    for key, text in config_map.get("data", {}).items():
        if key == "speculative-config":
            configs.append(json.loads(text))
        elif key.endswith(".yaml"):
            speculative = (yaml.safe_load(text) or {}).get("speculative_config")
            configs += [speculative] if speculative else []
    return configs


def speculative_decoding_of(config_map: dict[str, Any]) -> str:
    """`MTP`, `DFlash`, ... as the performance table spells upstream's method; `none` without one."""
    methods = [str(s.get("method") or s.get("decoding_type") or "") for s in speculative_configs(config_map)]
    methods = [SPECULATIVE_METHODS.get(m.lower(), m) for m in methods if m]
    return methods[0] if methods else NO_SPECULATION


def routing_of(dgd: dict[str, Any]) -> str:
    """`single`, `kv` (the frontend routes on KV events) or `<n>P<m>D` (prefill/decode replicas)."""
    components = dgd["spec"]["components"]
    if any(c["type"] in ("prefill", "decode") for c in components):
        count = {role: sum(c["replicas"] for c in components if c["type"] == role) for role in ("prefill", "decode")}
        return f"{count['prefill']}P{count['decode']}D"
    for component in components:
        if component["type"] == "frontend":
            args = [str(a) for a in component["podTemplate"]["spec"]["containers"][0].get("args", [])]
            if "--router-mode" in args and args[args.index("--router-mode") + 1] == "kv":
                return "kv"
    return "single"


class Recipe:
    """One target's upstream ConfigMap + DynamoGraphDeployment, with what the stack derives from them."""

    def __init__(self, entry: TargetEntry, config_map: dict[str, Any], dgd: dict[str, Any]) -> None:
        self.entry = entry
        self.config_map = config_map
        self.dgd = dgd

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def name(self) -> str:
        return str(self.dgd["metadata"]["name"])

    @property
    def backend(self) -> str:
        return str(self.dgd["spec"]["backendFramework"])

    @property
    def components(self) -> list[dict[str, Any]]:
        return list(self.dgd["spec"]["components"])

    @property
    def component_names(self) -> list[str]:
        return [c["name"] for c in self.components]

    @property
    def disaggregated(self) -> bool:
        return any(c["type"] in ("prefill", "decode") for c in self.components)

    def worker_components(self) -> list[dict[str, Any]]:
        return [c for c in self.components if c["type"] in WORKER_COMPONENT_TYPES]

    @staticmethod
    def gpus_per_replica(component: dict[str, Any]) -> int:
        containers = component.get("podTemplate", {}).get("spec", {}).get("containers", [])
        return sum(int(c.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0)) for c in containers)

    @property
    def gpu_products(self) -> list[str]:
        """GPU product labels the workers are pinned to (node affinity on `nvidia.com/gpu.product`)."""
        products: list[str] = []
        for component in self.worker_components():
            affinity = component["podTemplate"]["spec"].get("affinity", {}).get("nodeAffinity", {})
            terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
            for term in terms:
                for expression in term.get("matchExpressions", []):
                    if expression["key"] == GPU_PRODUCT_LABEL:
                        products += [v for v in expression["values"] if v not in products]
        return products

    @property
    def checkpoints(self) -> list[str]:
        """Hugging Face repos the workers load: the served model plus any speculative draft model."""
        repos: list[str] = []
        for component in self.worker_components():
            args = component["podTemplate"]["spec"]["containers"][0].get("args", [])
            if "--model" in args:
                repos.append(args[args.index("--model") + 1])
        for speculative in speculative_configs(self.config_map):
            draft = speculative.get("model") or speculative.get("speculative_model")  # MTP drafts with the base's heads
            repos += [draft] if draft else []
        return list(dict.fromkeys(repos))

    @property
    def speculative_decoding(self) -> str:
        return speculative_decoding_of(self.config_map)

    @property
    def routing(self) -> str:
        return routing_of(self.dgd)

    @property
    def served_model_name(self) -> str:
        for component in self.worker_components():
            args = component["podTemplate"]["spec"]["containers"][0].get("args", [])
            if "--served-model-name" in args:
                return str(args[args.index("--served-model-name") + 1])
        raise ValueError(f"{self.id}: no --served-model-name in any worker")

    def copy_manifests(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return copy.deepcopy(self.config_map), copy.deepcopy(self.dgd)
