"""The stack under the real Pulumi engine and a real API server (issue 22's seven scenarios, issue 32's planted node
mismatch and prod's own composition).

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

from serving_stack.names import GPU_TAINT
from tools.e2e.engine import PROJECT_NAME, REPO, Project, stack_config
from tools.e2e.engine_state import (
    engine_plan,
    engine_steps,
    missing_objects,
    model_plan,
    render_resources,
    stack_objects,
    state_resources,
)
from tools.e2e.fake_nodes import GPU, declared_gpu_nodes, eks_nodes, stack_nodes

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
    project: Project, cluster, stack: str, config: dict[str, Any], secrets=None, timeout: int = 420, nodes=None
) -> list[dict[str, Any]]:
    """Write the stack file, render it, give the cluster the nodes its node groups or its config declare
    (or `nodes`), `stack init` and `up`."""
    project.write_stack(stack, config)
    records = project.render(stack)
    cluster.replace_nodes(nodes if nodes is not None else stack_nodes(records, declared_gpu_nodes(config)))
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
    summary = project.preview(DEV).summary
    # `read`: the stack's own last deployment (the StackReference the target-swap check reads), not a change.
    assert summary and set(summary.resource_changes) <= {"same", "read"}, summary
    project.up(DEV, expect_no_changes=True)


def test_3_second_stack_on_the_same_cluster(project: Project, cluster, dev_config):
    other = copy.deepcopy(dev_config)
    other[KEY + "kubernetes"]["namespace"] = _namespace(dev_config) + "-b"
    project.write_stack("dev-b", other)
    records = project.render("dev-b")
    cluster.replace_nodes(stack_nodes(records, declared_gpu_nodes(other)))
    project.init("dev-b")
    project.up("dev-b")
    assert missing_objects(cluster.kube, project.state(DEV)) == []

    project.destroy("dev-b")
    assert missing_objects(cluster.kube, project.state(DEV)) == [], "destroying dev-b took part of dev"
    project.up(DEV, expect_no_changes=True)

    project.up("dev-b")
    project.destroy(DEV)
    assert missing_objects(cluster.kube, project.state("dev-b")) == [], "destroying dev took part of dev-b"
    project.up(DEV)
    project.destroy("dev-b")
    project.remove("dev-b")
    assert missing_objects(cluster.kube, project.state(DEV)) == []


def _changed_prewarm_program(project: Project) -> None:
    """One more line in the project's copy of the prewarm program (what a code change to it does)."""
    program = project.root / "prewarm" / "prewarm.py"
    program.write_text(program.read_text() + "\n# changed by the end-to-end update scenario\n")


def _restore_prewarm_program(project: Project) -> None:
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
    project.write_stack(DEV, config)
    if change == "prewarm-program":
        _changed_prewarm_program(project)
    try:
        after = project.render(DEV)
        preview = project.preview(DEV)
        engine, model = engine_plan(preview.steps), model_plan(before, after)
        assert engine, f"the engine plans no change for {change}"
        steps = engine_steps(preview.steps)
        assert engine == model, {
            n: (engine.get(n), model.get(n), steps.get(n)) for n in {*engine, *model} if engine.get(n) != model.get(n)
        }
        cluster.replace_nodes(stack_nodes(after, declared_gpu_nodes(config)))
        project.up(DEV)
        assert all(_ready_graphs(cluster, _namespace(config)).values())
    finally:
        if change == "prewarm-program":
            _restore_prewarm_program(project)
        project.write_stack(DEV, dev_config)
        project.up(DEV)


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
    # A cluster whose one GPU node holds exactly one target's GPUs (declared in the stack's config, as a user
    # would): the new target can start only once the old one is gone.
    full = copy.deepcopy(dev_config)
    (fixture, *_) = eks_nodes().gpuNodes
    full[KEY + "kubernetes"]["gpuNodes"] = [{"labels": dict(fixture.labels), "resources": {GPU: gpus}}]
    project.write_stack(DEV, full)
    cluster.replace_nodes(stack_nodes(records, declared_gpu_nodes(full)))
    project.up(DEV)

    swapped = copy.deepcopy(full)
    swapped[KEY + "targets"] = [{"id": successor}]
    project.write_stack(DEV, swapped)
    started = time.monotonic()
    refused = project.preview(DEV, check=False)
    assert not refused.ok and time.monotonic() - started < 120
    message = [m.strip() for m in refused.diagnostics() if "targets" in m and successor in m]
    assert message and all("\n" not in m for m in message), refused.diagnostics()[-20:]

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
    records = project.render(DEV)
    project.destroy(DEV)
    assert stack_objects(cluster.kube, namespace, records) == []

    # With the operator gone, a DGD cannot lose its finalizer: destroy fails in bounded time, naming it.
    bounded = copy.deepcopy(dev_config)
    bounded[KEY + "dynamo"] = {**bounded.get(KEY + "dynamo", {}), "deleteTimeoutSeconds": 30}
    project.write_stack(DEV, bounded)
    records += project.render(DEV)  # what this stack file deploys (test 5 left another target)
    project.up(DEV)
    cluster.stop_operator()
    try:
        started = time.monotonic()
        result = project.destroy(DEV, check=False, timeout=600)
        elapsed = time.monotonic() - started
        assert not result.ok
        assert any("nvidia.com/finalizer" in m for m in result.diagnostics("warning", "error")), result.diagnostics()
        assert elapsed < 300, elapsed
    finally:
        cluster.start_operator()
    project.destroy(DEV)
    assert stack_objects(cluster.kube, namespace, records) == []


def _unschedulable(cluster, namespace: str) -> list[str]:
    """The scheduler's message on each GPU pod of the namespace it cannot place (empty while it has none)."""
    messages = []
    for pod in cluster.kube.list("Pod", namespace):
        limits = [(c.get("resources") or {}).get("limits") or {} for c in pod["spec"]["containers"]]
        conditions = (pod.get("status") or {}).get("conditions") or []
        scheduled = next((c for c in conditions if c["type"] == "PodScheduled"), {})
        if any(GPU in limit for limit in limits) and scheduled.get("reason") == "Unschedulable":
            messages.append(str(scheduled.get("message")))
    return messages


@pytest.mark.parametrize("plant", ["taint-value", "resource-no-node-advertises"])
def test_6b_a_planted_node_mismatch_fails_the_scenario(project: Project, cluster, dev_config, plant):
    """Nodes that differ from what the workers ask for (a taint whose value the workers' toleration does not
    match; no node advertising the GPUs they request): the workers stay Pending and the DGD never Ready.
    `up` does not wait for the graph here (dynamo.readiness.wait: false), so the failure shows in seconds."""
    (fixture, *_) = eks_nodes().gpuNodes
    shape = fixture.model_dump()
    # The taint key the workers tolerate, with another value than theirs (serving_stack.names.GPU_TAINT).
    planted_taint = {**GPU_TAINT, "value": GPU_TAINT["value"] + "-planted"}
    declared = {**shape, "taints": [planted_taint]} if plant == "taint-value" else {**shape, "resources": {}}
    config = copy.deepcopy(dev_config)
    config[KEY + "kubernetes"] = {
        **config[KEY + "kubernetes"],
        "namespace": _namespace(dev_config) + "-planted",
        "gpuNodes": [declared],
    }
    config[KEY + "dynamo"] = {**config.get(KEY + "dynamo", {}), "readiness": {"wait": False}}
    config[KEY + "operability"] = {**config.get(KEY + "operability", {}), "smokeTests": {"enabled": False}}
    stack = f"planted-{plant}"
    records = _deploy(project, cluster, stack, config, timeout=300)
    try:
        expected = "untolerated taint" if plant == "taint-value" else f"Insufficient {GPU}"
        messages = cluster.kube.wait_for(
            "the GPU workers to be unschedulable", lambda: _unschedulable(cluster, _namespace(config)), timeout=90
        )
        assert all(expected in m for m in messages), messages
        graphs = _ready_graphs(cluster, _namespace(config))
        assert graphs and not any(graphs.values()), graphs
    finally:
        project.destroy(stack)
        project.remove(stack)
    assert stack_objects(cluster.kube, _namespace(config), records) == []


def prod_on_existing_cluster() -> dict[str, Any]:
    """Prod's Kubernetes side on a cluster reached by kubeconfig, its GPU pools declared as existing
    (`managed: false`: the plan still places prod's targets on them, EFA where prod's are EFA) and no AWS
    resource or Helm release (their charts cannot be fetched here): the cluster runs the Dynamo platform, the
    device plugins and its own Prometheus (the vendored monitoring CRDs, installed by the harness)."""
    config = stack_config("prod")
    pools = [{**pool, "managed": False} for pool in config[KEY + "aws"]["nodePools"]]
    plugins = dict.fromkeys(("nvidia", "efa", "rdmaSharedDevice", "draDriver"), False)
    for key in [k for k in config if k.startswith("aws:") or k in (KEY + "aws", KEY + "sagemaker")]:
        del config[key]
    config[KEY + "aws"] = {"region": stack_config("prod")[KEY + "aws"]["region"], "nodePools": pools}
    config[KEY + "aws"]["devicePlugins"] = plugins
    config[KEY + "kubernetes"] = {
        **config[KEY + "kubernetes"],
        "cluster": {"source": "kubeconfig", "context": "nemotron-dev"},
    }
    config[KEY + "dynamo"] = {**config.get(KEY + "dynamo", {}), "platform": {"install": False}}
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


def _requests(manifest: dict[str, Any], resource: str) -> bool:
    return any(
        resource in ((container.get("resources") or {}).get("limits") or {})
        for component in (manifest.get("spec") or {}).get("components") or []
        for container in ((component.get("podTemplate") or {}).get("spec") or {}).get("containers") or []
    )


def test_7_prod_composition_on_nodes_built_from_prods_node_groups(project: Project, cluster):
    """Prod's own DGDs (its EFA targets) on one node per desired node of prod's rendered node groups, with
    the device plugins prod installs (tools/e2e/fake_nodes.py)."""
    from tools.e2e.fake_nodes import EFA

    project.write_stack("prod", stack_config("prod"))
    nodes = stack_nodes(project.render("prod"))
    config = prod_on_existing_cluster()
    records = _deploy(
        project,
        cluster,
        "prod-shape",
        config,
        secrets={"gatewayMasterKey": "sk-e2e-" + "0" * 32},
        timeout=300,
        nodes=nodes,
    )
    assert not [r for r in records if r["type"] == "kubernetes:helm.sh/v3:Release" or r["type"].startswith("aws:")]
    graphs = [m for m in _manifests(records) if m["kind"] == "DynamoGraphDeployment"]
    assert any(_requests(g, EFA) for g in graphs), "prod's targets request no EFA"
    assert state_resources(project.state("prod-shape")) == render_resources(records)
    ready = _ready_graphs(cluster, _namespace(config))
    assert set(ready) == {g["metadata"]["name"] for g in graphs} and ready and all(ready.values()), ready
    project.destroy("prod-shape")
    assert stack_objects(cluster.kube, _namespace(config), records) == []
