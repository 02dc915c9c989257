"""An upgrade under the engine: the previous release deployed with its own code, then `pulumi up` of HEAD, as
every merged pull request does to a running stack.

The previous release is the merge-base of HEAD with `main` (what a pull request upgrades from), or on `main`
itself HEAD's first parent (what the last merge upgraded from); it runs from a worktree of that commit, in the
virtualenv of its own requirements. The prediction is the rollout model's plan for base -> HEAD
(`engine_state.model_plan`, what `make diff` shows): the engine's preview must plan exactly it, the `up` must
do exactly it (the steps its events say it finished), and every DynamoGraphDeployment of HEAD's render is Ready after.
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tools.e2e.engine import PROJECT_NAME, REPO, Project
from tools.e2e.engine_state import (
    engine_plan,
    model_plan,
    render_resources,
    stack_objects,
    state_resources,
)
from tools.e2e.fake_nodes import declared_gpu_nodes, stack_nodes
from tools.pr_diff.render_ref import base_worktree, tree_venv

KEY = PROJECT_NAME + ":"
STACK = "dev"
SUFFIX = "-upgrade"  # never the namespace the dev scenarios start from


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout.strip()


def previous_release() -> str:
    head = _git("rev-parse", "HEAD")
    for main in ("main", "origin/main"):
        try:
            base = _git("merge-base", "HEAD", main)
        except subprocess.CalledProcessError:
            continue
        if base != head:
            return base
    return _git("rev-parse", "HEAD^")


def _config(tree: Path) -> dict[str, Any]:
    config = copy.deepcopy(yaml.safe_load((tree / f"Pulumi.{STACK}.yaml").read_text())["config"])
    config[KEY + "kubernetes"]["namespace"] += SUFFIX
    return dict(config)


def _manifests(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["inputs"] for r in records if r["type"].startswith("kubernetes:") and r.get("custom")]


def _use(project: Project, tree: Path, venv: Path) -> dict[str, Any]:
    """The project's code, data and stack file become `tree`'s, run in `venv`."""
    project.link(tree, venv)
    config = _config(tree)
    project.write_stack(STACK, config)
    return config


def test_upgrade_from_the_previous_release(cluster, tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("upgrade")
    with base_worktree(REPO, previous_release()) as (tree, commit):
        base_venv = tree_venv(tree, REPO, REPO / ".venv", f"base {commit[:10]}")
        context = _config(REPO)[KEY + "kubernetes"]["cluster"]["context"]
        project = Project.create(work / "pulumi", cluster.plane.kubeconfig_with_context(work / "kubeconfig", context))
        head_config = _use(project, REPO, REPO / ".venv")
        after = project.render(STACK)
        _use(project, tree, base_venv)
        before = project.render(STACK)
        cluster.replace_nodes(stack_nodes(after, declared_gpu_nodes(head_config)))
        project.init(STACK)
        project.up(STACK, timeout=420)

    _use(project, REPO, REPO / ".venv")
    predicted = model_plan(before, after)
    planned = engine_plan(project.preview(STACK).steps)
    assert planned == predicted, {n: (planned.get(n), predicted.get(n)) for n in {*planned, *predicted}}
    applied = engine_plan(project.up(STACK, timeout=420).finished)
    assert applied == predicted, {n: (applied.get(n), predicted.get(n)) for n in {*applied, *predicted}}

    namespace = head_config[KEY + "kubernetes"]["namespace"]
    assert state_resources(project.state(STACK)) == render_resources(after)
    rendered = {m["metadata"]["name"] for m in _manifests(after) if m["kind"] == "DynamoGraphDeployment"}
    graphs = cluster.kube.list("DynamoGraphDeployment", namespace)
    ready = {
        g["metadata"]["name"]
        for g in graphs
        if any(c["type"] == "Ready" and c["status"] == "True" for c in (g.get("status") or {}).get("conditions") or [])
    }
    assert rendered and ready == rendered == {g["metadata"]["name"] for g in graphs}
    project.destroy(STACK)
    assert stack_objects(cluster.kube, namespace, after) == []
