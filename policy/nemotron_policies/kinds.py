"""What a resource is, from its type token and (for Kubernetes objects inside other resources) from its
`apiVersion`/`kind`: never from labels or names the resource gives itself.

- A Kubernetes resource `kubernetes:<group>/<version>:<Kind>` is the object `<Kind>` of that group, in every
  version the provider knows (`apps/v1` and `extensions/v1beta1` Deployments alike), its `<Kind>Patch`
  (server-side apply patch) and `<Kind>List` (`items`) forms included.
- A YAML component (`kubernetes:yaml:ConfigGroup`/`ConfigFile`, `kubernetes:yaml/v2:...`) holds objects in its
  `objs` and `yaml` inputs where the program passes them inline: each is read as the object it declares. A
  `file` input is a path the pack cannot read; the engine analyzes the objects the provider registers.
- Helm (`kubernetes:helm.sh/v3:Release`, `.../v3:Chart`, `.../v4:Chart`) exposes only its `values` (and the
  text of `valueYamlFiles` string assets, read by image-pinning).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional

import yaml

from .values import UNKNOWN, as_list, dig

YAML_COMPONENT_KINDS = frozenset({"ConfigGroup", "ConfigFile"})
HELM_KINDS = frozenset({"Release", "Chart"})
HELM_GROUP = "helm.sh"
YAML_GROUP = "yaml"


@dataclass(frozen=True)
class KubeObject:
    """A Kubernetes object a resource declares. `where` is "" for the resource itself, else its place in the
    resource's inputs (`objs[1]`, `yaml[0] document 2`, `items[3]`)."""

    group: str  # "" for the core group
    version: str
    kind: str
    body: Any
    where: str = ""

    @property
    def namespace(self) -> Any:
        """The namespace: a string, `UNKNOWN`, or None (unset or malformed)."""
        return _identity(dig(self.body, "metadata", "namespace"))

    @property
    def name(self) -> Any:
        return _identity(dig(self.body, "metadata", "name"))


def _identity(value: Any) -> Any:
    return value if value is UNKNOWN or isinstance(value, str) else None


def kubernetes_type(resource_type: str) -> Optional[tuple[str, str, str]]:
    """`(group, version, Kind)` of a Kubernetes type token (`core` -> ""), None for anything else."""
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return None
    group, _, version = parts[1].rpartition("/")
    if not group:  # `kubernetes:yaml:ConfigGroup` (v1 components) has no version
        group, version = parts[1], ""
    return ("" if group == "core" else group), version, parts[2]


def is_kind(resource_type: str, group: str, kind: str) -> bool:
    """Is this resource a `kind` of `group` (any version, patch form included)?"""
    parsed = kubernetes_type(resource_type)
    return parsed is not None and parsed[0] == group and _base_kind(parsed[2]) == kind


def _base_kind(kind: str) -> str:
    return kind[: -len("Patch")] if kind.endswith("Patch") and len(kind) > len("Patch") else kind


def _split_api_version(api_version: Any) -> tuple[str, str]:
    if not isinstance(api_version, str):
        return "", ""
    group, _, version = api_version.rpartition("/")
    return group, version


def _embedded(document: Any, where: str) -> Iterator[KubeObject]:
    """Objects of one embedded document (a `List`, or an object with apiVersion/kind)."""
    if not isinstance(document, dict):
        return
    kind = document.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(document.get("items"), list):
        for index, item in enumerate(document["items"]):
            yield from _embedded(item, f"{where}.items[{index}]")
        return
    if isinstance(kind, str):
        group, version = _split_api_version(document.get("apiVersion"))
        yield KubeObject(group, version, _base_kind(kind), document, where)


def _yaml_documents(text: Any, where: str) -> Iterator[KubeObject]:
    if not isinstance(text, str):
        return
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return  # the provider refuses it; nothing would be created
    for index, document in enumerate(documents):
        yield from _embedded(document, f"{where} document {index}")


def kubernetes_objects(resource_type: str, props: Any) -> list[KubeObject]:
    """The Kubernetes objects a resource declares (none for non-Kubernetes resources or unknown inputs)."""
    parsed = kubernetes_type(resource_type)
    if parsed is None or props is UNKNOWN:
        return []
    group, version, kind = parsed
    if group == YAML_GROUP and kind in YAML_COMPONENT_KINDS:
        objects: list[KubeObject] = []
        objs = dig(props, "objs")
        for index, obj in enumerate(objs if isinstance(objs, list) else [objs]):
            objects += _embedded(obj, f"objs[{index}]")
        texts = dig(props, "yaml")
        for index, text in enumerate(texts if isinstance(texts, list) else [texts]):
            objects += _yaml_documents(text, f"yaml[{index}]")
        return objects
    if group == HELM_GROUP:
        return []
    if kind.endswith("List") and isinstance(dig(props, "items"), list):
        return [
            KubeObject(group, version, kind[: -len("List")], item, f"items[{index}]")
            for index, item in enumerate(as_list(dig(props, "items")))
        ]
    return [KubeObject(group, version, _base_kind(kind), props)]


def is_helm(resource_type: str) -> bool:
    """Is this a Helm release or chart (`kubernetes:helm.sh/v3:Release`, `.../v3:Chart`, `.../v4:Chart`)?"""
    parsed = kubernetes_type(resource_type)
    return parsed is not None and parsed[0] == HELM_GROUP and parsed[2] in HELM_KINDS


def helm_values(resource_type: str, props: Any) -> Any:
    """The `values` of a Helm release or chart, or None."""
    return dig(props, "values") if is_helm(resource_type) else None


def aws_type(resource_type: str) -> Optional[tuple[str, str]]:
    """`(service, Resource)` of an AWS type token (`aws:s3/bucketV2:BucketV2` -> `("s3", "BucketV2")`)."""
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "aws":
        return None
    return parts[1].split("/")[0], parts[2]


def ancestor_types(urn: str) -> list[str]:
    """Type tokens of a resource's parents, outermost first, from its URN's qualified type."""
    parts = urn.split("::")
    return parts[2].split("$")[:-1] if len(parts) >= 4 else []
