"""Every GPU worker of every rendered DGD keeps its compilation caches on the model cache, in a directory named
by a hash of what invalidates them (catalog/platform.yaml `compileCache`)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from stack_helpers import BASE_CONFIG, DGD_TYPE, all_targets_config, run_config

from serving_stack.facts.catalog import load_catalog, load_platform
from serving_stack.names import GPU_RESOURCE, MODEL_CACHE_CLAIM
from serving_stack.plan.serving import compile_cache_key
from tools.mock_runtime import plain_numbers

pytestmark = pytest.mark.catalog_driven
CACHE = load_platform().compileCache
KEY = re.compile(rf"^{re.escape(CACHE.directory)}/[0-9a-f]{{16}}$")


def _gpu_main(component: dict[str, Any]) -> dict[str, Any] | None:
    containers = component["podTemplate"]["spec"].get("containers", [])
    return next((c for c in containers if int(c.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0))), None)


def _cache_mount(container: dict[str, Any]) -> dict[str, Any]:
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == CACHE.mountPath]
    return mount


def _rendered_dgds(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return [plain_numbers(r.inputs) for r in run_config(raw).resources if r.type == DGD_TYPE]


@pytest.fixture(scope="module")
def all_dgds() -> list[dict[str, Any]]:
    return _rendered_dgds(all_targets_config())


def test_every_gpu_worker_of_every_target_uses_a_keyed_cache_on_the_model_cache(all_dgds) -> None:
    catalog = load_catalog()
    expected = sum(1 for r in catalog.recipes.values() for c in r.components if _gpu_main(c) is not None)
    assert expected and len(all_dgds) == len(catalog.recipes)
    seen = 0
    for dgd in all_dgds:
        for component in dgd["spec"]["components"]:
            main = _gpu_main(component)
            if main is None:
                assert "compilationCache" not in component
                continue
            seen += 1
            where = f"{dgd['metadata']['name']} {component['name']}"
            assert component["compilationCache"] == {"pvcName": MODEL_CACHE_CLAIM, "mountPath": CACHE.mountPath}
            mount = _cache_mount(main)
            assert mount["name"] == MODEL_CACHE_CLAIM and KEY.match(mount["subPath"]) and not mount.get("readOnly")
            volumes = component["podTemplate"]["spec"]["volumes"]
            assert {"name": MODEL_CACHE_CLAIM, "persistentVolumeClaim": {"claimName": MODEL_CACHE_CLAIM}} in volumes
            env = {e["name"]: e.get("value") for e in main["env"]}
            for name, value in CACHE.values(dgd["spec"]["backendFramework"]).items():
                assert env[name] == value, where
                assert value.startswith(CACHE.mountPath), where
            assert [e["name"] for e in main["env"]].count("VLLM_CACHE_ROOT") <= 1, where
    assert seen == expected


def test_workers_that_compile_differently_never_share_a_directory(all_dgds) -> None:
    keys: dict[str, tuple[str, str]] = {}
    for dgd in all_dgds:
        for component in dgd["spec"]["components"]:
            main = _gpu_main(component)
            if main is not None:
                where = (dgd["metadata"]["name"], component["name"])
                assert keys.setdefault(_cache_mount(main)["subPath"], where) == where


def test_the_key_follows_what_invalidates_the_artifacts_and_nothing_else() -> None:
    recipe = load_catalog().recipe(BASE_CONFIG["targets"][0]["id"])
    config_map, dgd = recipe.copy_manifests()
    main = next(c for c in map(_gpu_main, dgd["spec"]["components"]) if c is not None)
    base = (main, recipe.gpu_products, config_map["data"], recipe.checkpoints)
    key = compile_cache_key(*base)
    assert compile_cache_key(*copy.deepcopy(base)) == key
    changed = {
        "image": ({**main, "image": main["image"] + "-next"}, *base[1:]),
        "GPU": (main, ["NVIDIA-OTHER"], *base[2:]),
        "engine arguments": ({**main, "args": [*main["args"], "--enforce-eager"]}, *base[1:]),
        "env": ({**main, "env": [*main["env"], {"name": "VLLM_USE_V2", "value": "1"}]}, *base[1:]),
        "ConfigMap data": (main, recipe.gpu_products, {**config_map["data"], "extra": "{}"}, recipe.checkpoints),
        "checkpoints": (*base[:3], [*recipe.checkpoints, "org/another-draft"]),
    }
    for what, inputs in changed.items():
        assert compile_cache_key(*inputs) != key, what


def test_the_same_target_gets_the_same_directory_in_every_stack_and_namespace() -> None:
    def subpaths(namespace: str) -> list[str]:
        raw = {**BASE_CONFIG, "kubernetes": {**BASE_CONFIG["kubernetes"], "namespace": namespace}}
        return [
            _cache_mount(m)["subPath"]
            for d in _rendered_dgds(raw)
            for m in map(_gpu_main, d["spec"]["components"])
            if m
        ]

    assert subpaths("team-a") == subpaths("team-b")
