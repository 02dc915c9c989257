"""Strict validators for monitoring.coreos.com objects from the CRDs vendored under schemas/crds/.

The API server prunes unknown fields of a structural CRD schema silently; these validators reject them
(`additionalProperties: false` wherever the schema lists properties and does not preserve unknown fields),
as kubernetes-validate's strict mode does for built-in kinds.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CRD_DIR = Path(__file__).resolve().parent.parent / "schemas" / "crds"
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(schema)
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
    group, version = api_version.split("/")
    for path in CRD_DIR.glob(f"{group}_*.yaml"):
        crd = next(d for d in yaml.safe_load_all(path.read_text()) if d)
        if crd["spec"]["names"]["kind"] == kind:
            (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
            schema = strict(served["schema"]["openAPIV3Schema"])
            return jsonschema.validators.validator_for(schema)(schema)
    raise LookupError(f"no vendored CRD for {api_version} {kind} in {CRD_DIR}")


def errors(obj: dict[str, Any]) -> list[str]:
    found = validator(obj["apiVersion"], obj["kind"]).iter_errors(obj)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in found]
