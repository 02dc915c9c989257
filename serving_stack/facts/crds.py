"""The CustomResourceDefinitions vendored under `schemas/crds/`: the one place they are read.

Each file is a verbatim, checksum-pinned copy of what a pinned chart installs (`schemas/crds/PROVENANCE.md`),
read with libyaml's safe loader rather than the data-file reader: the DGD CRD alone is about 1.6 MB, beyond
what a project data file may be, and its content is upstream's, not ours to shape.

`pruned_paths` answers what the API server would silently drop from an object before storing it: a
structural schema prunes every field it does not declare (Kubernetes documentation, "Extend the Kubernetes
API with CustomResourceDefinitions", section "Field pruning"): an object's keys outside its `properties`,
every key of an object that declares neither `properties` nor `additionalProperties`, unless the node sets
`x-kubernetes-preserve-unknown-fields: true`; `apiVersion`, `kind` and `metadata` stay on the root and on
`x-kubernetes-embedded-resource` nodes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

CRD_DIR = Path(__file__).resolve().parents[2] / "schemas" / "crds"
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
EMBEDDED_RESOURCE = "x-kubernetes-embedded-resource"
RESOURCE_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


@functools.cache
def served_schema(api_version: str, kind: str) -> Mapping[str, Any]:
    """The `openAPIV3Schema` the vendored CRD of `kind` serves at `api_version` (e.g. `nvidia.com/v1beta1`)."""
    group, version = api_version.split("/")
    for path in sorted(CRD_DIR.glob(f"{group}_*.yaml")):
        crd = next(d for d in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if d)
        if crd["spec"]["names"]["kind"] == kind:
            (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
            schema: Mapping[str, Any] = served["schema"]["openAPIV3Schema"]
            return schema
    raise LookupError(f"no vendored CRD for {api_version} {kind} in {CRD_DIR}")


def _walk(value: Any, schema: Mapping[str, Any], path: str, resource: bool) -> Iterator[str]:
    if isinstance(value, list):
        items = schema.get("items", {})
        for index, item in enumerate(value):
            yield from _walk(item, items, f"{path}[{index}]", bool(items.get(EMBEDDED_RESOURCE)))
        return
    if not isinstance(value, dict):
        return
    properties: Mapping[str, Any] = schema.get("properties", {})
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        child = f"{path}.{key}" if path else key
        if resource and key == "metadata":  # ObjectMeta, pruned by its own rules, not the schema's
            continue
        if key in properties:
            sub = properties[key]
            yield from _walk(item, sub, child, bool(sub.get(EMBEDDED_RESOURCE)))
        elif isinstance(additional, dict):
            yield from _walk(item, additional, child, bool(additional.get(EMBEDDED_RESOURCE)))
        elif not (schema.get(PRESERVE_UNKNOWN) or additional is True or (resource and key in RESOURCE_FIELDS)):
            yield child


def pruned_paths(obj: Mapping[str, Any]) -> list[str]:
    """Every field of `obj` (a custom resource) that the API server would prune, as `spec.a[0].b`."""
    return list(_walk(obj, served_schema(obj["apiVersion"], obj["kind"]), "", True))
