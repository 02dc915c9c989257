"""The smoke, benchmark and canary objects for every catalog target validate strictly and carry the
catalog's values; the programs they run are all in the ConfigMap they mount."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import kubernetes_validate
import pytest

from ops import smoke
from serving_stack.config.operability import BenchmarkConfig, OperabilityConfig
from serving_stack.config.serving import TargetConfig
from serving_stack.contract.outputs import frontend_url
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan import operability
from serving_stack.plan.operability import SMOKE_WAIT_AFTER_READY_SECONDS, Endpoint
from serving_stack.plan.serving import effective_replicas, gpus_used

pytestmark = pytest.mark.catalog_driven

KUBERNETES_VERSION = "1.33.0"
NAMESPACE = "nemotron-test"
ROOT = Path(__file__).resolve().parents[1]
CATALOG = load_catalog()
SETTINGS = OperabilityConfig()  # the block's defaults
TRACE = SETTINGS.benchmark.traceFile


def endpoint_of(recipe) -> Endpoint:
    return Endpoint(
        recipe.id,
        recipe.name,
        recipe.served_model_name,
        frontend_url(recipe.name, NAMESPACE),
        gpus_used(recipe, effective_replicas(recipe, TargetConfig(id=recipe.id))),
    )


def published_of(recipe) -> dict:
    return {"performance": recipe.entry.performance.model_dump(), "criteria": CATALOG.criteria.model_dump()}


def objects_for(recipe) -> dict[str, dict]:
    endpoint = endpoint_of(recipe)
    bench = operability.benchmark_job(
        endpoint,
        NAMESPACE,
        SETTINGS.benchmark,
        concurrency=recipe.entry.performance.concurrency,
        claim_name="shared-model-cache",
        published=published_of(recipe),
    )
    canary = operability.canary_deployment(endpoint, NAMESPACE, SETTINGS.canary, {"example/sha256": "0" * 64})
    smoke_job = operability.smoke_test_job(endpoint, NAMESPACE, SETTINGS.smokeTests, SMOKE_WAIT_AFTER_READY_SECONDS, {})
    return {
        "smoke": smoke_job,
        "bench": bench,
        "bench-on-demand": operability.on_demand(bench),
        "canary": canary,
        "canary-monitor": operability.canary_pod_monitor(canary, SETTINGS.canary, {"release": "kube-prometheus-stack"}),
    }


def args_of(container: dict) -> dict[str, str]:
    return dict(zip(container["args"][::2], container["args"][1::2], strict=True))


RECIPES = sorted(CATALOG.recipes.values(), key=lambda r: r.id)


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.id)
def test_built_in_objects_validate_strictly(recipe):
    built = [o for o in objects_for(recipe).values() if o["kind"] != "PodMonitor"]
    for obj in [*built, operability.program_config_map(NAMESPACE, operability.read_programs())]:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_names_are_unique_per_target_and_fit_a_cronjob():
    names = [
        o["metadata"]["name"] for r in RECIPES for k, o in objects_for(r).items() if k in ("smoke", "bench", "canary")
    ]
    assert len(names) == len(set(names)) == 3 * len(RECIPES)
    assert max(map(len, names)) <= 52


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.id)
def test_the_benchmark_replays_the_trace_at_the_catalog_concurrency_and_compares_with_the_catalog_row(recipe):
    job = objects_for(recipe)["bench"]
    pod = job["spec"]["template"]["spec"]
    (main,) = pod["containers"]
    args = args_of(main)
    assert args["--concurrency"] == str(recipe.entry.performance.concurrency)
    assert args["--trace"] == f"{operability.MODEL_CACHE}/traces/{TRACE}"
    assert (
        args["--model"] == recipe.served_model_name
        and args["--url"] == f"http://{recipe.name}-frontend.{NAMESPACE}.svc.cluster.local:8000"
    )
    assert json.loads(args["--compare"]) == {
        "target": recipe.id,
        "gpus": gpus_used(recipe, effective_replicas(recipe, TargetConfig(id=recipe.id))),
        **published_of(recipe),
    }
    assert int(args["--num-requests"]) > 0  # bounded by default: 0 would replay the whole trace (hours)
    assert args["--results-root"].startswith(operability.MODEL_CACHE + "/")
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["model-cache"]["persistentVolumeClaim"]["claimName"] == "shared-model-cache"
    term = pod["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert term["labelSelector"]["matchLabels"] == {
        operability.COMPONENT_TYPE_LABEL: "frontend",
        operability.DGD_NAME_LABEL: recipe.name,
    }
    assert main["securityContext"]["runAsNonRoot"] and main["securityContext"]["readOnlyRootFilesystem"]
    (init,) = pod["initContainers"]
    assert init["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] > 0


def test_the_benchmark_image_runs_the_aiperf_version_the_tests_run():
    pinned = re.search(r"^aiperf==(\S+)$", (ROOT / "requirements-aiperf.txt").read_text(), re.MULTILINE)[1]
    assert BenchmarkConfig().image.endswith(f":{pinned}")


def test_the_smoke_deadline_counts_every_check_of_the_program():
    assert len(smoke.CHECKS) == operability.SMOKE_CHECKS


def test_the_smoke_job_is_bounded_and_unprivileged():
    recipe = RECIPES[0]
    job = objects_for(recipe)["smoke"]
    spec = job["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    args = args_of(container)
    assert args["--base-url"] == frontend_url(recipe.name, NAMESPACE) and args["--model"] == recipe.served_model_name
    attempts = spec["backoffLimit"] + 1
    assert spec["activeDeadlineSeconds"] >= attempts * (
        int(args["--wait"]) + len(smoke.CHECKS) * int(args["--timeout"])
    )
    assert "ttlSecondsAfterFinished" not in spec  # Pulumi manages it: a TTL-deleted Job would be drift
    assert container["resources"]["limits"] and container["securityContext"]["runAsUser"] == operability.NOBODY
    assert spec["template"]["spec"]["automountServiceAccountToken"] is False


def test_on_demand_wraps_the_job_suspended_unless_scheduled():
    bench = objects_for(RECIPES[0])["bench"]
    on_demand = operability.on_demand(bench)
    assert on_demand["spec"]["suspend"] is True and on_demand["spec"]["jobTemplate"]["spec"] == bench["spec"]
    scheduled = operability.on_demand(bench, "0 3 * * 0")
    assert scheduled["spec"]["suspend"] is False and scheduled["spec"]["schedule"] == "0 3 * * 0"
    kubernetes_validate.validate(scheduled, KUBERNETES_VERSION, strict=True)


def test_the_pod_monitor_selects_the_canary_pods_on_their_metrics_port():
    objects = objects_for(RECIPES[0])
    canary, monitor = objects["canary"], objects["canary-monitor"]
    pod = canary["spec"]["template"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (container,) = pod["spec"]["containers"]
    assert {p["name"] for p in container["ports"]} == {e["port"] for e in monitor["spec"]["podMetricsEndpoints"]}
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert args_of(container)["--target"] == RECIPES[0].id


def test_the_config_map_ships_every_program_and_every_sibling_they_import():
    data = operability.program_config_map(NAMESPACE, operability.read_programs())["data"]
    assert data == {name: (ROOT / "ops" / name).read_text() for name in operability.PROGRAM_FILES}
    siblings = {path.stem for path in (ROOT / "ops").glob("*.py")}
    for name, source in data.items():
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            node.module.split(".")[0]
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.module
        }
        assert {f"{m}.py" for m in imported & siblings} <= set(data), name
        assert "yaml" not in imported or name == "benchmark_compare.py"  # the CLI alone reads the catalog
    commands = [
        c["command"][1]
        for r in RECIPES[:1]
        for o in objects_for(r).values()
        if o["kind"] in ("Job", "Deployment")
        for c in o["spec"]["template"]["spec"]["containers"]
    ]
    assert {Path(c).name for c in commands} <= set(data)
