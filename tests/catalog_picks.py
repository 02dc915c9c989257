"""Catalog targets picked by what they are, never by id, so a test holds for any revision the catalog absorbs.

`pick(...)` is the first target (by id) with every asked property; when the catalog has none, the test
fails and says which kind of target it needs (a revision without one needs the test rethought, not a
skip). Properties are read from the manifests, as the stack reads them.
"""

from __future__ import annotations

from typing import Optional

import pytest

from serving_stack.facts.aws import load_aws_catalog
from serving_stack.facts.catalog import Recipe, load_catalog
from serving_stack.names import EFA_RESOURCE

RDMA_RESOURCE = "rdma/ib"


def gpu_of(recipe: Recipe) -> Optional[str]:
    """`h100`, `gb200`, ... (catalog/gpus.yaml), None for a product label no entry knows."""
    return load_aws_catalog().gpu_of_product(recipe.gpu_products[0])


def gpu_of_instance(instance_type: str) -> str:
    """`p5en.48xlarge` -> `h200` (catalog/instance_types.yaml)."""
    return load_aws_catalog().instance_types[instance_type].gpu


def upstream_fabric(recipe: Recipe) -> str:
    """The KV-transfer fabric the upstream workers request: `efa`, `ib`, or `none` (GB200: cluster-specific)."""
    limits = [
        w["podTemplate"]["spec"]["containers"][0].get("resources", {}).get("limits", {})
        for w in recipe.worker_components()
    ]
    if any(EFA_RESOURCE in limit for limit in limits):
        return "efa"
    return "ib" if any(RDMA_RESOURCE in limit for limit in limits) else "none"


def _matches(recipe: Recipe, wanted: dict[str, object]) -> bool:
    facts = {
        "backend": recipe.backend,
        "disaggregated": recipe.disaggregated,
        "gpu": gpu_of(recipe),
        "speculative": recipe.speculative_decoding,
        "routing": recipe.routing,
        "fabric": upstream_fabric(recipe),
        "published": recipe.entry.performance.published,
        "drafts": len(recipe.checkpoints) > 1,
        "known_gpu": gpu_of(recipe) is not None,
    }
    return all(facts[key] == value for key, value in wanted.items())


def picks(**wanted: object) -> list[Recipe]:
    """Every target with these properties, by id. Keys: backend, disaggregated, gpu, speculative, routing,
    fabric (upstream's), published (has figures), drafts (loads a draft checkpoint), known_gpu."""
    return [r for _, r in sorted(load_catalog().recipes.items()) if _matches(r, wanted)]


def pick(**wanted: object) -> Recipe:
    found = picks(**wanted)
    if not found:
        described = ", ".join(f"{key}={value}" for key, value in wanted.items())
        pytest.fail(f"the catalog has no target with {described}; this test needs one")
    return found[0]


def pick_other(recipe: Recipe, **wanted: object) -> Recipe:
    """A second target with these properties, not `recipe`."""
    found = [r for r in picks(**wanted) if r.id != recipe.id]
    if not found:
        pytest.fail(f"the catalog has no target besides {recipe.id} with {wanted}; this test needs one")
    return found[0]
