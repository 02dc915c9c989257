"""image-pinning: every image is pinned (a version tag or a digest; no `latest`, no bare name), names its
registry, and comes from an allowed registry.

Images are read from every container of every pod a resource declares (`pods.pod_specs`: init, ephemeral
and Dynamo main/sidecar containers, every served DGD version, objects inlined in YAML components, custom
resources), from image volumes (`volumes[].image.reference`), from Helm values, and from SageMaker models
(`primaryContainer.image`, `containers[].image`) and inference components (`specification.container.image`).
A custom resource the pack has no reader for (Argo `templates[].container`, Tekton `steps[]`, anything else)
is also searched for every string under an image key, however deep, whether or not it sits in a pod spec.

In Helm values (`values`, and the `text` of `valueYamlFiles` assets; read by `helm_images.py`) an image is a
string under a key named `image`, ending in `Image` or `imageName`/`imageRef`/`imageUri` (`repo:tag`,
`registry/repo@digest`), or a mapping with a `repository` (plus `registry`, `tag`, `digest`; `name` stands for
`repository` under an `image` key), with `imageRepository` (plus `imageRegistry`, `imageTag`, `imageDigest`),
or with an Istio-style `hub` and `tag`; a mapping without `registry` takes `global.imageRegistry`. Values a
chart defaults internally, and value files given by `path`, are invisible to the pack.

A version tag starts with MAJOR.MINOR (`3.12-slim`, `1.5.0-nemotron-3.5-lightning-dev.1`,
`2.4.0-tgi2.3.1-gpu-py311-cu124-ubuntu22.04`). The registry must be explicit: a short name (`python:3.12`)
is resolved by the node's container runtime through its search registries, which the stack does not control.
Registries are matched on the normalized reference; an allow-list entry is a host glob optionally followed
by a path prefix (`docker.io/library`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Any, Optional

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from ..config import settings
from ..helm_images import IMAGE_KEY, helm_images, value_files
from ..kinds import helm_values, is_helm, kubernetes_objects
from ..pods import is_searched, pod_specs
from ..values import UNKNOWN, as_list, dig, plain, text
from ..workloads import container_label, containers

SAGEMAKER_MODEL = "aws:sagemaker/model:Model"
# Not in pulumi-aws 7 yet (the AWS API has it; aws-native does): read when a provider registers one.
INFERENCE_COMPONENTS = frozenset(
    {"aws:sagemaker/inferenceComponent:InferenceComponent", "aws-native:sagemaker:InferenceComponent"}
)
DEFAULT_ALLOWED_REGISTRIES = [
    "nvcr.io",
    "docker.io/library",
    "public.ecr.aws",
    "registry.k8s.io",
    "ghcr.io",
    "*.dkr.ecr.*.amazonaws.com",
    "763104351884.dkr.ecr.*.amazonaws.com",  # AWS deep-learning containers (SageMaker)
]
SCHEMA = PolicyConfigSchema(
    {
        "allowedRegistries": {
            "type": "array",
            "items": {"type": "string"},
            "default": DEFAULT_ALLOWED_REGISTRIES,
            "description": "Registries images may come from: a host glob, optionally followed by a path prefix.",
        },
    }
)
VERSION_TAG = re.compile(r"^v?\d+\.\d+([.\-+_][0-9A-Za-z][0-9A-Za-z.\-+_]*)?$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
SEARCH_DEPTH = 64


def parse_image(reference: str) -> tuple[str, str, Optional[str], Optional[str]]:
    """`registry, repository path, tag, digest` with Docker Hub's implicit registry and `library/` filled in."""
    name, _, digest = reference.partition("@")
    tag = None
    if name.rfind(":") > name.rfind("/"):
        name, _, tag = name.rpartition(":")
    first, _, rest = name.partition("/")
    if rest and _is_host(first):
        registry, path = first, rest
    else:
        registry, path = "docker.io", name if rest else f"library/{name}"
    if registry == "index.docker.io":
        registry = "docker.io"
    return registry, path, tag, digest or None


def _is_host(component: str) -> bool:
    return "." in component or ":" in component or component == "localhost"


def registry_allowed(registry: str, path: str, allowed: list[str]) -> bool:
    for entry in allowed:
        host, _, prefix = entry.partition("/")
        if fnmatchcase(registry, host) and (not prefix or path == prefix or path.startswith(prefix + "/")):
            return True
    return False


def image_problem(reference: str, allowed: list[str]) -> Optional[str]:
    registry, path, tag, digest = parse_image(reference)
    first, _, rest = reference.partition("@")[0].partition("/")
    problems = []
    if not (rest and _is_host(first)):
        problems.append(
            f"names no registry (a short name resolves through the node's search registries; write {registry}/{path})"
        )
    if digest is not None:
        if not DIGEST.match(digest):
            problems.append(f"has a malformed digest {digest!r}")
    elif tag is None:
        problems.append("has no tag or digest")
    elif "latest" in tag or not VERSION_TAG.match(tag):
        problems.append(f"has tag {tag!r}, not a version (MAJOR.MINOR...) or a digest")
    if not registry_allowed(registry, path, allowed):
        problems.append(f"is not from an allowed registry ({registry}/{path} matches none of {', '.join(allowed)})")
    return f"image {reference!r} {' and '.join(problems)}" if problems else None


def _image_strings(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Every string under an image key of a custom resource, however it nests (Argo, Tekton, ...)."""
    if depth > SEARCH_DEPTH:
        return
    if isinstance(value, dict):
        for key, child in value.items():
            where = f"{path}.{key}"
            if IMAGE_KEY.match(str(key)) and (isinstance(child, str) or child is UNKNOWN):
                yield where, child
            else:
                yield from _image_strings(child, where, depth + 1)
    for index, child in enumerate(as_list(value)):
        yield from _image_strings(child, f"{path}[{index}]", depth + 1)


def images(resource_type: str, props: Any) -> Iterator[tuple[str, Any]]:
    """(where, image reference or `UNKNOWN`) of every image a resource runs."""
    seen: set[int] = set()
    for pod in pod_specs(resource_type, props):
        for container in containers(pod.spec):
            seen.add(id(container))
            yield container_label(container, pod), container.get("image")
        for volume in as_list(dig(pod.spec, "volumes")):
            if isinstance(dig(volume, "image"), dict):
                seen.add(id(volume["image"]))
                where = f"image volume {text(dig(volume, 'name')) or '?'} of {pod.owner}"
                yield where, dig(volume, "image", "reference")
    for obj in kubernetes_objects(resource_type, props):
        if is_searched(obj):
            label = f"{obj.kind} {obj.name or '?'}{f' ({obj.where})' if obj.where else ''}"
            yield from (
                (f"{label} {where}", image)
                for where, image in _image_strings(_without(dig(obj.body, "spec"), seen), "spec")
            )
    values = helm_values(resource_type, props)
    if values is not None:
        yield from helm_images(values)
    if is_helm(resource_type):
        for where, file_values in value_files(props):
            yield from helm_images(file_values, where)
    if resource_type in INFERENCE_COMPONENTS:
        yield "specification.container", dig(props, "specification", "container", "image")
    if resource_type == SAGEMAKER_MODEL:
        yield "primaryContainer", dig(props, "primaryContainer", "image")
        for index, container in enumerate(as_list(dig(props, "containers"))):
            yield f"containers[{index}]", dig(container, "image")


def _without(value: Any, seen: set[int]) -> Any:
    """`value` with the mappings already judged as containers or image volumes left out."""
    if isinstance(value, dict):
        return {k: _without(v, seen) for k, v in value.items() if id(v) not in seen}
    if isinstance(value, list):
        return [_without(v, seen) for v in value if id(v) not in seen]
    return value


def validate_image_pinning(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    allowed = [str(entry) for entry in as_list(settings(args, SCHEMA)["allowedRegistries"])]
    for where, reference in images(args.resource_type, plain(args.props)):
        if reference is UNKNOWN or reference is None:
            continue
        problem = image_problem(str(reference), allowed) if text(reference) else "has an empty image"
        if problem:
            report_violation(f"{where}: {problem}", None)
