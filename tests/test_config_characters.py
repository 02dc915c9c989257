"""Identifiers, versions, ARNs, account ids and URLs are ASCII where the API reads ASCII: a look-alike
(a fullwidth digit, a Cyrillic letter, a typographic hyphen) put anywhere into a valid value is refused,
naming the key and the character's position; the unedited values parse."""

from __future__ import annotations

import copy
import json
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serving_stack.config import ConfigError, parse_stack_config
from tools.stack_files import stack_config

PROJECT = "nemotron-lightning"


def committed(stack: str) -> dict[str, Any]:
    config, _ = stack_config(stack)
    raw = {}
    for key, value in config.items():
        if key.startswith(f"{PROJECT}:"):
            try:
                raw[key.removeprefix(f"{PROJECT}:")] = json.loads(value)
            except json.JSONDecodeError:
                raw[key.removeprefix(f"{PROJECT}:")] = value
    return raw


# Key paths of the committed stacks whose values an API reads as ASCII, and values set for the test where
# the committed stacks leave a key unset.
ASCII_KEYS: dict[str, Any] = {
    "kubernetes.namespace": None,
    "aws.region": None,
    "aws.cluster.create.name": None,
    "aws.cluster.create.kubernetesVersion": None,
    "aws.cluster.create.availabilityZones[0]": None,
    "aws.cluster.create.accessEntries[0].principalArn": None,
    "aws.systemNodeGroup.instanceTypes[0]": None,
    "aws.nodePools[0].name": None,
    "aws.nodePools[0].instanceType": None,
    "modelCache.storageClassName": None,
    "sagemaker.endpoints[0].name": None,
    "sagemaker.endpoints[0].huggingface.repo": None,
    "sagemaker.endpoints[0].instanceType": None,
    "targets[0].id": None,
    "demand.gpuTypes[0]": None,
    "dynamo.runtime.tag": "1.5.0-nemotron-3.5-lightning-dev.1",
    "dynamo.runtime.registry": "nvcr.io/nvidia/ai-dynamo",
    "monitoring.runbookBaseUrl": "https://runbooks.example.com/nemotron",
    "autoscaling.prometheusUrl": "http://prometheus.monitoring.svc:9090",
    "operability.smokeTests.image": "docker.io/library/python:3.12.8-slim",
}
# Look-alikes of ASCII characters: fullwidth forms (U+FF01..U+FF5E mirror ASCII 0x21..0x7E), Cyrillic
# letters that look Latin, and the typographic hyphens and minus.
CYRILLIC = {"a": "а", "c": "с", "e": "е", "o": "о", "p": "р", "x": "х", "y": "у", "i": "і", "s": "ѕ"}
HYPHENS = ["\u2010", "\u2011", "\u2012", "\u2013", "\u2212", "\ufe63", "\uff0d"]


def look_alikes(character: str) -> list[str]:
    found = []
    if "!" <= character <= "~":
        found.append(chr(ord(character) - 0x21 + 0xFF01))
    if character.lower() in CYRILLIC:
        found.append(CYRILLIC[character.lower()])
    if character == "-":
        found += HYPHENS
    return found


def _parts(path: str) -> list[Any]:
    parts: list[Any] = []
    for name in path.split("."):
        head, *indexes = name.replace("]", "").split("[")
        parts.append(head)
        parts += [int(index) for index in indexes]
    return parts


def get(config: dict[str, Any], path: str) -> Any:
    node: Any = config
    for part in _parts(path):
        node = node[part]
    return node


def put(config: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = _parts(path)
    node: Any = config
    for part in parents:
        node = node.setdefault(part, {}) if isinstance(node, dict) else node[part]
    node[last] = value


def base_config() -> dict[str, Any]:
    config = committed("prod")
    for path, value in ASCII_KEYS.items():
        if value is not None:
            put(config, path, value)
    return config


BASE = base_config()


def test_the_base_parses():
    parse_stack_config(BASE)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(list(ASCII_KEYS)), st.data())
def test_a_look_alike_anywhere_is_refused_with_its_position(path, data):
    value = get(BASE, path)
    positions = [index for index, character in enumerate(value) if look_alikes(character)]
    index = data.draw(st.sampled_from(positions))
    substitute = data.draw(st.sampled_from(look_alikes(value[index])))
    config = copy.deepcopy(BASE)
    put(config, path, value[:index] + substitute + value[index + 1 :])
    with pytest.raises(ConfigError) as raised:
        parse_stack_config(config)
    message = str(raised.value)
    assert message.startswith(f"{path}: "), message
    assert (
        f"character {index + 1} is {substitute!r} (U+{ord(substitute):04X} {unicodedata.name(substitute)})" in message
    )
