"""What the alert rules know of a target is read from its DGD as placed: component names, and whether a
disaggregated target's KV moves over NIXL LIBFABRIC (an EFA pool) or not (InfiniBand: NIXL's default UCX)."""

from __future__ import annotations

import pytest
from aws_helpers import pool

from serving_stack.facts.aws import load_aws_catalog
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.monitoring import watched_target
from serving_stack.plan.serving import place_target

pytestmark = pytest.mark.catalog_driven


def placed(recipe, fabric: str):
    node_pool = pool(fabric=fabric, efa_interfaces=16 if fabric == "efa" else 0, gpu_product=recipe.gpu_products[0])
    return place_target(recipe.dgd, recipe, node_pool, load_aws_catalog().fabrics)


def test_disaggregated_targets_on_efa_move_kv_over_libfabric_and_on_infiniband_do_not():
    disaggregated = [r for r in load_catalog().recipes.values() if r.disaggregated]
    assert disaggregated
    for recipe in disaggregated:
        published = recipe.entry.performance.ttftP50Ms
        assert watched_target(recipe.id, placed(recipe, "efa"), published).kv_over_libfabric, recipe.id
        assert not watched_target(recipe.id, placed(recipe, "ib"), published).kv_over_libfabric, recipe.id


def test_components_and_published_ttft_come_from_the_manifest_and_the_catalog():
    for recipe in load_catalog().recipes.values():
        target = watched_target(recipe.id, recipe.dgd, recipe.entry.performance.ttftP50Ms)
        assert target.dgd_name == recipe.name
        assert target.frontend_component in recipe.component_names
        assert set(target.worker_components) == {c["name"] for c in recipe.worker_components()}
        published = recipe.entry.performance.ttftP50Ms
        assert target.published_ttft_p50_seconds == (None if published is None else pytest.approx(published / 1000))
        assert not (target.kv_over_libfabric and not recipe.disaggregated)
