"""Strict validators for custom resources from the CRDs vendored under schemas/crds/ (read by
`serving_stack.facts.crds`, the one reader).

The API server prunes unknown fields of a structural CRD schema silently; these validators reject them
(`additionalProperties: false` wherever the schema lists properties and does not preserve unknown fields),
as kubernetes-validate's strict mode does for built-in kinds.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

import jsonschema

from serving_stack.facts.crds import PRESERVE_UNKNOWN, served_schema


def strict(served: Mapping[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(dict(served))
    stack = [schema]
    while stack:
        node = stack.pop()
        if "properties" in node and "additionalProperties" not in node and not node.get(PRESERVE_UNKNOWN):
            node["additionalProperties"] = False
        for value in node.values():
            if isinstance(value, dict):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, dict))
    return schema


@functools.cache
def validator(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    schema = strict(served_schema(api_version, kind))
    return jsonschema.validators.validator_for(schema)(schema)


def errors(obj: dict[str, Any]) -> list[str]:
    found = validator(obj["apiVersion"], obj["kind"]).iter_errors(obj)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in found]
