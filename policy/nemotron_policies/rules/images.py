"""image-pinning: every image is pinned (a version tag or a digest; no `latest`, no bare name) and comes
from an allowed registry.

Images are read from DGD and built-in workload containers (init and ephemeral included), from Helm release
values wherever a `repository` + `tag` pair (optionally with `registry` / `digest`) is set, and from
SageMaker models (`primaryContainer.image`, `containers[].image`).

A version tag starts with MAJOR.MINOR (`3.12-slim`, `1.5.0-nemotron-3.5-lightning-dev.1`,
`2.4.0-tgi2.3.1-gpu-py311-cu124-ubuntu22.04`): the Dynamo operator admits semver, the AWS deep-learning
containers add framework suffixes, and `python:3.12-slim` is the documented base of the prewarm DaemonSet.
Registries are matched on the normalized reference: a bare `python` is `docker.io/library/python`;
an allow-list entry is a host glob optionally followed by a path prefix (`docker.io/library`).
"""
from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Any, Iterator, Optional

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from ..config import settings
from ..values import UNKNOWN, as_list, dig, plain, text
from ..workloads import container_label, containers, pod_specs

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
SAGEMAKER_MODEL = "aws:sagemaker/model:Model"
DEFAULT_ALLOWED_REGISTRIES = [
    "nvcr.io",
    "docker.io/library",
    "public.ecr.aws",
    "registry.k8s.io",
    "ghcr.io",
    "*.dkr.ecr.*.amazonaws.com",
    "763104351884.dkr.ecr.*.amazonaws.com",  # AWS deep-learning containers (SageMaker)
]
SCHEMA = PolicyConfigSchema({
    "allowedRegistries": {
        "type": "array",
        "items": {"type": "string"},
        "default": DEFAULT_ALLOWED_REGISTRIES,
        "description": "Registries images may come from: a host glob, optionally followed by a path prefix.",
    },
})
VERSION_TAG = re.compile(r"^v?\d+\.\d+([.\-+_][0-9A-Za-z][0-9A-Za-z.\-+_]*)?$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def parse_image(reference: str) -> tuple[str, str, Optional[str], Optional[str]]:
    """`registry, repository path, tag, digest` with Docker Hub's implicit registry and `library/` filled in."""
    name, _, digest = reference.partition("@")
    tag = None
    if name.rfind(":") > name.rfind("/"):
        name, _, tag = name.rpartition(":")
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, rest
    else:
        registry, path = "docker.io", name if rest else f"library/{name}"
    if registry == "index.docker.io":
        registry = "docker.io"
    return registry, path, tag, digest or None


def registry_allowed(registry: str, path: str, allowed: list[str]) -> bool:
    for entry in allowed:
        host, _, prefix = entry.partition("/")
        if fnmatchcase(registry, host) and (not prefix or path == prefix or path.startswith(prefix + "/")):
            return True
    return False


def image_problem(reference: str, allowed: list[str]) -> Optional[str]:
    registry, path, tag, digest = parse_image(reference)
    problems = []
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


def _helm_images(values: Any, path: str = "values") -> Iterator[tuple[str, str]]:
    """(where, reference) for every repository/tag pair in Helm values."""
    if isinstance(values, dict):
        repository, tag, digest = (text(values.get(k)) for k in ("repository", "tag", "digest"))
        if repository and (tag or digest):
            registry = text(values.get("registry"))
            reference = f"{registry + '/' if registry else ''}{repository}{':' + tag if tag else ''}"
            yield path, reference + (f"@{digest}" if digest else "")
        for key, value in values.items():
            yield from _helm_images(value, f"{path}.{key}")
    for index, value in enumerate(as_list(values)):
        yield from _helm_images(value, f"{path}[{index}]")


def images(resource_type: str, props: Any) -> Iterator[tuple[str, Any]]:
    """(where, image reference or `UNKNOWN`) of every image a resource runs."""
    for pod in pod_specs(resource_type, props):
        for container in containers(pod.spec):
            yield container_label(container, pod), container.get("image")
    if resource_type == HELM_RELEASE:
        yield from _helm_images(dig(props, "values"))
    if resource_type == SAGEMAKER_MODEL:
        yield "primaryContainer", dig(props, "primaryContainer", "image")
        for index, container in enumerate(as_list(dig(props, "containers"))):
            yield f"containers[{index}]", dig(container, "image")


def validate_image_pinning(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    allowed = [str(entry) for entry in as_list(settings(args, SCHEMA)["allowedRegistries"])]
    for where, reference in images(args.resource_type, plain(args.props)):
        if reference is UNKNOWN or reference is None:
            continue
        problem = image_problem(str(reference), allowed) if text(reference) else "has an empty image"
        if problem:
            report_violation(f"{where}: {problem}")
