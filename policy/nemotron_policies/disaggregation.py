"""Which containers are disaggregated prefill/decode workers, judged by what they do, and what their KV
transfer and speculative-decoding settings are.

A container is a disaggregated worker when any of these holds:
- it runs with `--disaggregation-mode prefill|decode` (Dynamo vLLM/SGLang/TRT-LLM) or the older
  `--is-prefill-worker` / `--is-decode-worker`;
- its `--kv-transfer-config` selects a NIXL connector (`NixlConnector`, or a `MultiConnector` with one);
- it is the engine container (`main`, else the GPU containers) of a Dynamo component typed prefill/decode.
Values are read through `arguments`: literal, `$(VAR)` from env, ConfigMap keys, shell scripts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional

from .arguments import ConfigMaps, Opaque, Resolved, command_line, flag_value, has_flag
from .names import GPU
from .pods import pod_specs
from .values import UNKNOWN, dig, parse_json, plain
from .workloads import DISAGGREGATED_TYPES, PodSpec, containers, resource_count

UCX = "UCX"
DISAGGREGATION_FLAG = "--disaggregation-mode"
KV_TRANSFER_FLAG = "--kv-transfer-config"
ROLE_FLAGS = {"--is-prefill-worker": "prefill", "--is-decode-worker": "decode"}
# Settings that change what a worker's NIXL metadata describes: prefill and decode must agree on them.
SPECULATIVE_FLAGS = ("--speculative-config", "--mamba-cache-mode")


@dataclass(frozen=True)
class Worker:
    resource: Any  # the PolicyResource that declares it
    pod: PodSpec
    container: dict[str, Any]
    words: tuple[Resolved, ...]
    role: str  # prefill | decode | kv-transfer

    @property
    def owner(self) -> str:
        return (
            self.pod.owner
            if self.container.get("name") == "main"
            else f"{self.pod.owner} container {self.container.get('name', '?')}"
        )


def kv_transfer_config(words: Iterable[Resolved]) -> Resolved:
    """`--kv-transfer-config` parsed: a dict, None (absent), `UNKNOWN`, `Opaque`, or the raw text if not JSON."""
    value = flag_value(list(words), KV_TRANSFER_FLAG)
    if value is None or value is UNKNOWN or isinstance(value, Opaque):
        return value
    parsed = parse_json(value)
    return parsed if isinstance(parsed, dict) else str(value)


def _uses_nixl(config: Any) -> bool:
    if not isinstance(config, dict):
        return False
    connectors = [config.get("kv_connector")] + [
        dig(c, "kv_connector")
        for c in (dig(config, "kv_connector_extra_config", "connectors") or [])
        if isinstance(c, dict)
    ]
    return any(isinstance(c, str) and "nixl" in c.lower() for c in connectors)


def kv_backends(config: Resolved) -> Any:
    """NIXL backends of a parsed `--kv-transfer-config` (UCX when none is given), `UNKNOWN`, or a problem."""
    if config is None:
        return [UCX]
    if config is UNKNOWN:
        return UNKNOWN
    if isinstance(config, Opaque):
        return (
            f"{KV_TRANSFER_FLAG} comes from {config}, which the pack cannot read; set it in the args or in a "
            "ConfigMap of this stack"
        )
    if not isinstance(config, dict):
        return f"{KV_TRANSFER_FLAG} is not a JSON object"
    backends = dig(config, "kv_connector_extra_config", "backends")
    if backends is None:
        return [UCX]
    if not isinstance(backends, list) or UNKNOWN in backends:
        return UNKNOWN
    return [str(b).upper() for b in backends]


def _role(pod: PodSpec, container: dict[str, Any], words: list[Resolved], engine: bool) -> Optional[str]:
    mode = flag_value(words, DISAGGREGATION_FLAG)
    if isinstance(mode, str) and not isinstance(mode, Opaque) and mode.lower() in DISAGGREGATED_TYPES:
        return mode.lower()
    for flag, role in ROLE_FLAGS.items():
        if has_flag(words, flag):
            return role
    if engine and pod.component_type in DISAGGREGATED_TYPES:
        return pod.component_type
    if _uses_nixl(kv_transfer_config(words)):
        return "kv-transfer"
    if isinstance(mode, Opaque) or isinstance(flag_value(words, KV_TRANSFER_FLAG), Opaque):
        return "kv-transfer"  # what it does cannot be read: judge it as a worker
    return None


def _engine_containers(pod: PodSpec) -> list[dict[str, Any]]:
    listed = containers(pod.spec, ("containers",))
    main = [c for c in listed if c.get("name") == "main"]
    return main or [
        c
        for c in listed
        if resource_count(c, "limits", GPU) not in (None, 0, UNKNOWN)
        or resource_count(c, "requests", GPU) not in (None, 0, UNKNOWN)
    ]


def workers(resources: Iterable[Any], config_maps: ConfigMaps) -> list[Worker]:
    """Every disaggregated worker container of the stack, prefill before decode within a resource."""
    found = []
    for resource in resources:
        props = plain(resource.props)
        for pod in pod_specs(resource.resource_type, props):
            engines = [id(c) for c in _engine_containers(pod)]
            for container in containers(pod.spec, ("containers",)):
                words = command_line(container, pod.namespace, config_maps)
                role = _role(pod, container, words, id(container) in engines)
                if role is not None:
                    found.append(Worker(resource, pod, container, tuple(words), role))
    order = {"prefill": 0, "decode": 1, "kv-transfer": 2}
    return sorted(found, key=lambda w: order[w.role])


def speculative_settings(worker: Worker) -> dict[str, Any]:
    """The settings prefill and decode must share, comparable (JSON normalized; where the pack cannot read a
    value, where it comes from); `UNKNOWN` where unknown."""
    settings = {}
    for flag in SPECULATIVE_FLAGS:
        value = flag_value(list(worker.words), flag)
        if value is UNKNOWN or isinstance(value, Opaque):
            settings[flag] = value
            continue
        parsed = parse_json(value) if isinstance(value, str) else None
        settings[flag] = json.dumps(parsed, sort_keys=True) if isinstance(parsed, dict) else (value or "none")
    return settings
