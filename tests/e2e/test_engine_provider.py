"""The shipped Kubernetes provider's create under the engine: a namespace that exists before the first `up`,
and a retry after an `up` interrupted mid-way (the CLI and its plugins killed once the first objects exist).

The program pins pulumi-kubernetes 4.34.2; the harness builds 4.25.0 (docs/e2e.md, "Provider version").
Since 4.29 the provider creates with a client-side create (a POST) unless the provider sets
`upsertExistingObjects`, so an object already in the cluster fails `AlreadyExists`; 4.25 creates by
server-side apply and silently adopts it. 4.25 with server-side apply off sends the same POST, so these
scenarios run the provider that way (`PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY=false`) and see what 4.34.2 does.

Decided for the stack: it never adopts. A namespace the stack creates (`kubernetes.createNamespace`, default
true) that already exists fails the first `up` and stays the admin's, untouched; `createNamespace: false` with
the level the admin's namespace enforces (`kubernetes.namespacePodSecurity`) uses it and leaves it, with what
else it holds, on destroy. After an interrupted `up`: the procedure of docs/deploy.md, "After an interrupted
`up`" (cancel, delete the stack's own objects the pending creates name, clear them, `up`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from tools.e2e.engine import PROJECT_NAME, Project, Run, kill_cli, stack_config
from tools.e2e.engine_state import (
    missing_objects,
    pending_creates,
    render_resources,
    stack_objects,
    state_resources,
)
from tools.e2e.fake_nodes import declared_gpu_nodes, stack_nodes

KEY = PROJECT_NAME + ":"
STACK = "dev-provider"
# 4.25.0's create as 4.29+ sends it (see above).
CREATE_AS_SHIPPED = {"PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY": "false"}
ENFORCE = "pod-security.kubernetes.io/enforce"
ADMIN_LABELS = {"owner": "cluster-admin", ENFORCE: "privileged"}


@pytest.fixture(scope="module")
def shipped(project: Project) -> Iterator[Project]:
    project.environment.update(CREATE_AS_SHIPPED)
    yield project
    for key in CREATE_AS_SHIPPED:
        del project.environment[key]


def _config(suffix: str) -> dict[str, Any]:
    config = copy.deepcopy(stack_config("dev"))
    config[KEY + "kubernetes"]["namespace"] += suffix  # never the namespace the dev scenarios start from
    return config


def _namespace(config: dict[str, Any]) -> str:
    return str(config[KEY + "kubernetes"]["namespace"])


def _prepare(project: Project, cluster, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Write and render the stack file (the render's policy gate included) and give the cluster its nodes."""
    project.write_stack(STACK, config)
    records = project.render(STACK)
    cluster.replace_nodes(stack_nodes(records, declared_gpu_nodes(config)))
    return records


def _all_ready(cluster, namespace: str, records: list[dict[str, Any]]) -> bool:
    rendered = {r["inputs"]["metadata"]["name"] for r in records if r["type"].endswith(":DynamoGraphDeployment")}
    graphs = {
        d["metadata"]["name"]: any(
            c["type"] == "Ready" and c["status"] == "True" for c in (d.get("status") or {}).get("conditions") or []
        )
        for d in cluster.kube.list("DynamoGraphDeployment", namespace)
    }
    return bool(rendered) and set(graphs) == rendered and all(graphs.values())


def _refused_as_existing(run: Run, names: list[str]) -> bool:
    """Whether the engine reported the create of one of `names` refused as `already exists`."""
    return any(f'"{name}" already exists' in m for m in run.diagnostics("error") for name in names)


def test_a_namespace_that_exists_before_the_first_up(shipped: Project, cluster):
    config = _config("-existing")
    namespace, kube = _namespace(config), cluster.kube
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": ADMIN_LABELS}})
    notes = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "admin-notes", "namespace": namespace}}
    kube.create({**notes, "data": {"owner": "cluster-admin"}})
    admins = (kube.get("Namespace", namespace) or {})["metadata"]["labels"]  # the API server adds its name label
    try:
        _prepare(shipped, cluster, config)
        shipped.init(STACK)
        refused = shipped.up(STACK, check=False, timeout=300)
        assert not refused.ok and _refused_as_existing(refused, [namespace]), refused.diagnostics()
        live = kube.get("Namespace", namespace) or {}
        assert live["metadata"]["labels"] == admins, "the stack adopted or relabelled the namespace"
        assert "kubernetes:core/v1:Namespace" not in {r["type"] for r in shipped.state(STACK)}

        # The config says: the namespace is the cluster's, and the level its admin set.
        config[KEY + "kubernetes"].update(createNamespace=False, namespacePodSecurity=ADMIN_LABELS[ENFORCE])
        records = _prepare(shipped, cluster, config)
        shipped.up(STACK, timeout=300)
        assert state_resources(shipped.state(STACK)) == render_resources(records)
        assert _all_ready(cluster, namespace, records)
        shipped.destroy(STACK)
        assert sorted(stack_objects(kube, namespace, records)) == [
            f"ConfigMap/{namespace}/admin-notes",
            f"Namespace//{namespace}",
        ]
        assert (kube.get("Namespace", namespace) or {})["metadata"]["labels"] == admins
        shipped.remove(STACK)
    finally:
        kube.delete("Namespace", namespace)
        kube.wait_for(f"namespace {namespace} to go", lambda: kube.get("Namespace", namespace) is None, timeout=120)


def test_a_retry_after_an_interrupted_up(shipped: Project, cluster):
    config = _config("-interrupted")
    namespace, kube = _namespace(config), cluster.kube
    records = _prepare(shipped, cluster, config)
    shipped.init(STACK)
    started = datetime.now(UTC).replace(microsecond=0)
    with ThreadPoolExecutor(max_workers=1) as background:
        up = background.submit(shipped.up, STACK, check=False, timeout=300)
        try:
            kube.wait_for(
                "the interrupted up's first objects",
                lambda: (
                    up.done()
                    or (kube.get("Namespace", namespace) is not None and kube.list("PersistentVolumeClaim", namespace))
                ),
                timeout=240,
                interval=0.2,
            )
        finally:
            killed = kill_cli()
        interrupted = up.result(timeout=60)
    assert killed and not interrupted.ok, interrupted.output[-3000:]  # the CLI was running when it was killed

    # docs/deploy.md, "After an interrupted `up`":
    shipped.stack(STACK).cancel()  # the lock the killed CLI left
    pending = pending_creates(shipped.deployment(STACK))
    existing = [p for p in pending if kube.get(p[1], p[3], p[2] or None) is not None]
    assert existing, f"the interruption left no object the state does not hold: {pending}"
    retry = shipped.up(STACK, check=False, timeout=300)
    assert not retry.ok and _refused_as_existing(retry, [name for *_, name in existing]), retry.diagnostics()

    # The objects the pending creates name that exist are the interrupted update's own (created after it
    # started), never adopted: deleted, then the pending creates cleared; the next `up` creates them.
    pending = pending_creates(shipped.deployment(STACK))
    orphans = [(kind, ns or None, name) for _, kind, ns, name in pending if kube.get(kind, name, ns or None)]
    born = [(kube.get(kind, name, ns) or {})["metadata"]["creationTimestamp"] for kind, ns, name in orphans]
    assert orphans and all(datetime.fromisoformat(b.replace("Z", "+00:00")) >= started for b in born), born
    for kind, ns, name in orphans:
        kube.delete(kind, name, ns)
    kube.wait_for("the orphans to go", lambda: all(kube.get(k, n, ns) is None for k, ns, n in orphans), timeout=60)
    shipped.run("refresh", STACK, timeout=300, clear_pending_creates=True)
    assert pending_creates(shipped.deployment(STACK)) == []
    shipped.up(STACK, timeout=300)
    state = shipped.state(STACK)
    assert state_resources(state) == render_resources(records)
    assert missing_objects(kube, state) == [] and _all_ready(cluster, namespace, records)
    shipped.destroy(STACK)
    assert stack_objects(kube, namespace, records) == []
    shipped.remove(STACK)
