"""The images Helm values name (the Helm half of the `image-pinning` rule's reading).

An image is a string under a key named `image`, ending in `Image` or `imageName`/`imageRef`/`imageUri`
(`IMAGE_KEY`), or a mapping with a `repository` (plus `registry`, `tag`, `digest`; `name` stands for
`repository` under an `image` key), with `imageRepository` (plus `imageRegistry`, `imageTag`, `imageDigest`),
or with an Istio-style `hub` and `tag`; a mapping without `registry` takes `global.imageRegistry`. Values are
read from a resource's `values` and from the `text` of its `valueYamlFiles` string assets.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Optional

import yaml

from .values import UNKNOWN, as_list, dig, text

IMAGE_KEY = re.compile(r"^(image|.*Image|imageName|imageRef|imageReference|imageUri|imageUrl)$")
MAPPED_KEYS = frozenset(
    {"registry", "repository", "tag", "digest", "name", "hub"}
    | {"imageRegistry", "imageRepository", "imageTag", "imageDigest"}
)


def _scalar(value: Any) -> Optional[str]:
    """A known string or number as text (YAML reads `tag: 1.5` as a float), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return text(value)


def _mapped_image(values: dict[str, Any], default_registry: Optional[str], under_image_key: bool, key: str) -> Any:
    """The reference a Helm image mapping stands for, None if it is not one, `UNKNOWN` if it cannot be told."""
    if "imageRepository" in values:
        values = {
            "repository": values.get("imageRepository"),
            "registry": values.get("imageRegistry"),
            "tag": values.get("imageTag"),
            "digest": values.get("imageDigest"),
        }
    elif isinstance(values.get("hub"), str) and ("tag" in values or isinstance(values.get("image"), str)):
        name = text(values.get("image")) or key or "image"  # Istio: <hub>/<image>:<tag>
        values = {"repository": f"{values['hub'].rstrip('/')}/{name}", "tag": values.get("tag")}
    given = values.get("repository", values.get("name") if under_image_key else None)
    if given is UNKNOWN:
        return UNKNOWN
    repository = text(given)
    if repository is None or "://" in repository:
        return None
    if UNKNOWN in (values.get("registry"), values.get("tag"), values.get("digest")):
        return UNKNOWN
    registry = _scalar(values.get("registry")) or default_registry
    tag, digest = _scalar(values.get("tag")), _scalar(values.get("digest"))
    reference = f"{registry + '/' if registry else ''}{repository}{':' + tag if tag else ''}"
    return reference + (f"@{digest}" if digest else "")


def _helm_images(values: Any, path: str, default_registry: Optional[str], key: str) -> Iterator[tuple[str, Any]]:
    under_image_key = bool(IMAGE_KEY.match(key))
    if under_image_key and (isinstance(values, str) or values is UNKNOWN):
        yield path, values
    elif isinstance(values, dict):
        mapped = _mapped_image(values, default_registry, under_image_key, key)
        if mapped is not None:
            yield path, mapped
        for child_key, child in values.items():
            if mapped is None or child_key not in MAPPED_KEYS or (child_key == "image" and "hub" not in values):
                yield from _helm_images(child, f"{path}.{child_key}", default_registry, str(child_key))
    for index, child in enumerate(as_list(values)):
        yield from _helm_images(child, f"{path}[{index}]", default_registry, key)


def helm_images(values: Any, where: str = "values") -> Iterator[tuple[str, Any]]:
    """(where, reference) for every image Helm values name, in string or mapping form."""
    default_registry = text(dig(values, "global", "imageRegistry")) or text(dig(values, "global", "image", "registry"))
    yield from _helm_images(values, where, default_registry, "")


def value_files(props: Any) -> Iterator[tuple[str, Any]]:
    """(where, parsed values) of the `valueYamlFiles` a Helm resource carries as text (string assets)."""
    for index, asset in enumerate(as_list(dig(props, "valueYamlFiles"))):
        content = dig(asset, "text")
        if not isinstance(content, str):
            continue  # a path or URI the pack cannot read here, or unknown
        try:
            yield f"valueYamlFiles[{index}]", yaml.safe_load(content)
        except yaml.YAMLError:
            continue  # Helm refuses it; nothing is deployed
