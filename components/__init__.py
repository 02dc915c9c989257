"""The ComponentResources: each builds its resources from the part of the plan it is given (`serving_stack.plan`),
beside `__main__.py`, which wires them; and the resource builders they share."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s


def children_wait_for(
    opts: Optional[pulumi.ResourceOptions],
) -> tuple[Optional[pulumi.ResourceOptions], list[pulumi.Resource]]:
    """A component's `opts.depends_on` as what the children that need it wait for: the component registers
    without it (it has no create step; the children that need nothing start at once)."""
    if opts is None or not opts.depends_on:
        return opts, []
    depends_on = opts.depends_on
    own = copy.copy(opts)
    own.depends_on = None
    return own, list(depends_on) if isinstance(depends_on, list) else [depends_on]  # type: ignore[list-item]


def helm_release(
    name: str, release: str, pin: Any, namespace: pulumi.Input[str], opts: pulumi.ResourceOptions, **args: Any
) -> k8s.helm.v3.Release:
    """An atomic Helm release `release` of a pinned chart (`pin`: its repository, chart and version)."""
    repository = k8s.helm.v3.RepositoryOptsArgs(repo=pin.repository)
    return k8s.helm.v3.Release(
        name,
        name=release,
        chart=pin.chart,
        version=pin.version,
        repository_opts=repository,
        namespace=namespace,
        atomic=True,
        opts=opts,
        **args,
    )


def custom_resource(
    name: str, manifest: Mapping[str, Any], namespace: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """A custom resource as the plan rendered it (`apiVersion`, `kind`, `metadata`, `spec`), in `namespace`."""
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata={**manifest["metadata"], "namespace": namespace},
        spec=manifest["spec"],
        opts=opts,
    )
