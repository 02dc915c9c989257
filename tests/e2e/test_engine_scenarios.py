"""The stack under the real Pulumi engine and a real API server (issue 22's seven scenarios).

The scenarios build on each other in file order (one cluster, one backend): dev is deployed by the
first, checked by the next ones and destroyed by the sixth. Expectations come from the committed stack
files and the render of the same stack file, never from literal resource names.
"""

from __future__ import annotations

import copy
import shutil
import time
from typing import Any

import pytest

from tools.e2e.engine_state import (
    engine_plan,
    engine_steps,
    missing_objects,
    model_plan,
    render_resources,
    stack_objects,
    state_resources,
)
from tools.e2e.fake_nodes import node_objects, node_shapes
from tools.e2e.pulumi_cli import PROJECT_NAME, Project, PulumiError, stack_config

KEY = PROJECT_NAME + ":"
DEV = "dev"


def _manifests(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["inputs"] for r in records if r["type"].startswith("kubernetes:") and r.get("custom")]


def _namespace(config: dict[str, Any]) -> str:
    return str(config[KEY + "kubernetes"]["namespace"])


def _ready_graphs(cluster, namespace: str) -> dict[str, bool]:
    return {
        d["metadata"]["name"]: any(
            c["type"] == "Ready" and c["status"] == "True" for c in (d.get("status") or {}).get("conditions") or []
        )
        for d in cluster.kube.list("DynamoGraphDeployment", namespace)
    }


def _deploy(
    project: Project, cluster, stack: str, config: dict[str, Any], secrets=None, timeout: int = 420
) -> list[dict[str, Any]]:
    """Write the stack file, render it, give the cluster nodes for it, `stack init` and `up`."""
    project.write_stack(stack, config)
    records = project.render(stack)
    cluster.replace_nodes(node_objects(node_shapes(_manifests(records))))
    project.init(stack, secrets)
    project.up(stack, timeout=timeout)
    return records


@pytest.fixture(scope="module")
def dev_config() -> dict[str, Any]:
    return stack_config(DEV)


def test_1_first_up_of_dev(project: Project, cluster, dev_config):
    namespace = _namespace(dev_config)
    assert cluster.kube.get("Namespace", namespace) is None
    records = _deploy(project, cluster, DEV, dev_config)
    state = project.state(DEV)
    assert state_resources(state) == render_resources(records)
    graphs = _ready_graphs(cluster, namespace)
    rendered = {m["metadata"]["name"] for m in _manifests(records) if m["kind"] == "DynamoGraphDeployment"}
    assert set(graphs) == rendered and all(graphs.values()), graphs
    assert missing_objects(cluster.kube, state) == []


def test_2_up_again_changes_nothing(project: Project):
    plan = project.preview(DEV)
    # `read`: the stack's own last deployment (the StackReference the target-swap check reads), not a change.
    assert set(plan["changeSummary"]) <= {"same", "read"}, plan["changeSummary"]
    project.up(DEV, "--expect-no-changes")


def test_3_second_stack_on_the_same_cluster(project: Project, cluster, dev_config):
    other = copy.deepcopy(dev_config)
    other[KEY + "kubernetes"]["namespace"] = _namespace(dev_config) + "-b"
    project.write_stack("dev-b", other)
    records = project.render("dev-b")
    nodes = node_objects(node_shapes(_manifests(records) + _manifests(project.render(DEV))))
    cluster.replace_nodes(nodes)
    project.init("dev-b")
    project.up("dev-b")
    assert missing_objects(cluster.kube, project.state(DEV)) == []

    project.destroy("dev-b")
    assert missing_objects(cluster.kube, project.state(DEV)) == [], "destroying dev-b took part of dev"
    project.up(DEV, "--expect-no-changes")

    project.up("dev-b")
    project.destroy(DEV)
    assert missing_objects(cluster.kube, project.state("dev-b")) == [], "destroying dev took part of dev-b"
    project.up(DEV)
    project.destroy("dev-b")
    project.pulumi("stack", "rm", "dev-b", "--yes")
    assert missing_objects(cluster.kube, project.state(DEV)) == []


def _changed_prewarm_program(project: Project) -> None:
    """One more line in the project's copy of the prewarm program (what a code change to it does)."""
    program = project.root / "prewarm" / "prewarm.py"
    program.write_text(program.read_text() + "\n# changed by the end-to-end update scenario\n")


def _restore_prewarm_program(project: Project) -> None:
    from tools.e2e.pulumi_cli import REPO

    shutil.copy2(REPO / "prewarm" / "prewarm.py", project.root / "prewarm" / "prewarm.py")


def _worker_component(records: list[dict[str, Any]]) -> str:
    dgd = next(m for m in _manifests(records) if m["kind"] == "DynamoGraphDeployment")
    return next(c["name"] for c in dgd["spec"]["components"] if c.get("type") != "frontend")


def _checkpoint_change(config: dict[str, Any]) -> None:
    """Another checkpoint in the model cache (a draft beside the base): the download Job and the prewarm
    DaemonSets' checkpoint list change."""
    from serving_stack.facts import load_facts

    cache = config[KEY + "modelCache"]["checkpoints"]
    listed = sorted(load_facts().checkpoints.repositories)
    cache["drafts"] = [*cache.get("drafts", []), next(r for r in listed if r != cache["base"])]


@pytest.mark.parametrize("change", ["replicas", "prewarm-program", "checkpoint"])
def test_4_update_plan_matches_the_rollout_model(project: Project, cluster, dev_config, change):
    before = project.render(DEV)
    config = copy.deepcopy(dev_config)
    if change == "replicas":
        config[KEY + "targets"] = [{**t, "replicas": {_worker_component(before): 2}} for t in config[KEY + "targets"]]
    elif change == "checkpoint":
        _checkpoint_change(config)
    project.write_stack(DEV, {**config, **{k: v for k, v in _stack_file(project, DEV).items() if k not in config}})
    if change == "prewarm-program":
        _changed_prewarm_program(project)
    try:
        after = project.render(DEV)
        preview = project.preview(DEV)
        engine, model = engine_plan(preview), model_plan(before, after)
        assert engine, f"the engine plans no change for {change}"
        steps = engine_steps(preview)
        assert engine == model, {
            n: (engine.get(n), model.get(n), steps.get(n)) for n in {*engine, *model} if engine.get(n) != model.get(n)
        }
        cluster.replace_nodes(node_objects(node_shapes(_manifests(after))))
        project.up(DEV)
        assert all(_ready_graphs(cluster, _namespace(config)).values())
    finally:
        if change == "prewarm-program":
            _restore_prewarm_program(project)
        project.write_stack(
            DEV, {**dev_config, **{k: v for k, v in _stack_file(project, DEV).items() if k not in dev_config}}
        )
        project.up(DEV)


def _stack_file(project: Project, stack: str) -> dict[str, Any]:
    return project.stack_file(stack)


def test_5_target_swap_on_full_gpu_pools(project: Project, cluster, dev_config):
    from serving_stack.facts import load_facts
    from serving_stack.plan.serving import gpus_used

    current = [t["id"] for t in dev_config[KEY + "targets"]]
    records = project.render(DEV)
    catalog = load_facts().catalog

    def shape(target_id: str) -> tuple[Any, ...]:
        recipe = catalog.recipe(target_id)
        replicas = {c["name"]: c["replicas"] for c in recipe.components}
        return tuple(recipe.gpu_products), recipe.disaggregated, gpus_used(recipe, replicas)

    same_gpu = sorted(i for i in catalog.recipes if i not in current and shape(i) == shape(current[0]))
    assert same_gpu, f"the catalog has no other target shaped like {current[0]}"
    successor = same_gpu[0]
    gpus = shape(current[0])[2]
    # Nodes that hold exactly one target's GPUs: the new target can start only once the old one is gone.
    shapes = node_shapes(_manifests(records), gpus_per_node=gpus)
    cluster.replace_nodes(node_objects(shapes, nodes_per_shape=1))
    project.up(DEV)

    swapped = copy.deepcopy(_stack_file(project, DEV))
    swapped[KEY + "targets"] = [{"id": successor}]
    project.write_stack(DEV, swapped)
    started = time.monotonic()
    with pytest.raises(PulumiError) as refused:
        project.preview(DEV)
    assert time.monotonic() - started < 120
    message = [line for line in refused.value.output.splitlines() if "targets" in line and successor in line]
    assert message, refused.value.output[-3000:]

    # The procedure the message names: remove the old target, then add the new one.
    emptied = copy.deepcopy(swapped)
    emptied[KEY + "targets"] = []
    project.write_stack(DEV, emptied)
    project.up(DEV)
    project.write_stack(DEV, swapped)
    project.up(DEV)
    graphs = _ready_graphs(cluster, _namespace(dev_config))
    assert list(graphs.values()) == [True] and len(graphs) == 1


def test_6_destroy(project: Project, cluster, dev_config):
    namespace = _namespace(dev_config)
    project.destroy(DEV)
    assert stack_objects(cluster.kube, namespace) == []

    # With the operator gone, a DGD cannot lose its finalizer: destroy fails in bounded time, naming it.
    bounded = _stack_file(project, DEV)
    bounded[KEY + "dynamo"] = {**bounded.get(KEY + "dynamo", {}), "deleteTimeoutSeconds": 30}
    project.write_stack(DEV, bounded)
    project.up(DEV)
    cluster.stop_operator()
    try:
        started = time.monotonic()
        result = project.destroy(DEV, check=False, timeout=600)
        elapsed = time.monotonic() - started
        assert result.returncode != 0
        assert "nvidia.com/finalizer" in result.stdout + result.stderr
        assert elapsed < 300, elapsed
    finally:
        cluster.start_operator()
    project.destroy(DEV)
    assert stack_objects(cluster.kube, namespace) == []


def prod_on_existing_cluster() -> dict[str, Any]:
    """Prod's serving side (targets, gateway, monitoring objects, operability) on a cluster reached by
    kubeconfig: no AWS resources, no Helm releases (their charts cannot be fetched here)."""
    config = stack_config("prod")
    aws_keys = [k for k in config if k.startswith("aws:") or k in (KEY + "aws", KEY + "sagemaker")]
    for key in aws_keys:
        del config[key]
    config[KEY + "kubernetes"]["cluster"] = {"source": "kubeconfig", "context": "nemotron-dev"}
    config[KEY + "dynamo"] = {**config.get(KEY + "dynamo", {}), "platform": {"install": False}}
    # The cluster's own Prometheus (its operator's CRDs are installed by the harness) instead of the charts.
    config[KEY + "monitoring"] = {
        **config.get(KEY + "monitoring", {}),
        "dcgmExporter": False,
        "prometheus": {
            "install": False,
            "releaseLabel": "kube-prometheus-stack",
            "url": "http://prometheus-operated.monitoring.svc:9090",
        },
    }
    return config


def test_7_prod_shaped_stack_on_an_existing_cluster(project: Project, cluster):
    config = prod_on_existing_cluster()
    records = _deploy(
        project, cluster, "prod-shape", config, secrets={"gatewayMasterKey": "sk-e2e-" + "0" * 32}, timeout=300
    )
    assert not [r for r in records if r["type"] == "kubernetes:helm.sh/v3:Release"]
    assert state_resources(project.state("prod-shape")) == render_resources(records)
    assert all(_ready_graphs(cluster, _namespace(config)).values())
    project.destroy("prod-shape")
    assert stack_objects(cluster.kube, _namespace(config)) == []
