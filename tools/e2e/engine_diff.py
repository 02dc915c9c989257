"""`make diff`'s engine preview: the real `pulumi preview --diff` of a change, where the built providers can.

For a stack with no AWS resources and no Helm releases (the AWS provider cannot be built here and charts
cannot be fetched), the base commit is deployed with the real CLI into a local backend against a control
plane on loopback (tools/e2e/harness.py), then the working tree is previewed against that state. The diff
is the engine's own (`pulumi preview --diff` through `pulumi.automation`), with the versions that produced it,
and so is its plan (the same preview's step events: one operation per resource, `engine_state.engine_plan`),
which `make diff` holds against the offline diff. The base's program runs in the base's virtualenv when it has its own. Everything
started is stopped before it returns.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from tools.e2e.control_plane import KUBERNETES_VERSION, TOOLS_BIN
from tools.e2e.engine import PROJECT_NAME, REPO, Project, PulumiError, stack_config
from tools.e2e.engine_state import engine_plan
from tools.e2e.fake_nodes import declared_gpu_nodes, stack_nodes
from tools.e2e.harness import Harness
from tools.pr_diff.render_ref import base_worktree

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
PROVIDER_VERSION = "4.25.0"  # the commit tools/e2e/gomod/kubernetes-provider builds
PREVIEW_LIMIT = 20_000  # characters of the engine's output a PR comment shows
# Placeholder values for the secrets a stack needs: the preview never reaches a real service.
PLACEHOLDER_SECRETS = {
    "gatewayMasterKey": "sk-engine-preview-placeholder",
    "ngcApiKey": "nvapi-placeholder",
    "hfToken": "hf_placeholder",
}


@dataclass(frozen=True)
class EnginePreview:
    """`text`: the engine's `preview --diff` output; `plan`: resource name -> its operation (`engine_plan`),
    empty when the engine could not preview."""

    label: str
    text: str
    plan: dict[str, str] = field(default_factory=dict)
    ran: bool = True


def not_previewable(records: Iterable[Mapping[str, Any]]) -> Optional[str]:
    """Why the engine cannot preview a render here, or None when it can."""
    types = {str(r["type"]) for r in records}
    if any(t.startswith("aws:") for t in types):
        return "it has AWS resources (the AWS provider plugin cannot be built here)"
    if HELM_RELEASE in types:
        return "it has Helm releases (their charts cannot be fetched here)"
    missing = [b for b in ("pulumi", "pulumi-resource-kubernetes", "kube-apiserver") if not (TOOLS_BIN / b).exists()]
    if missing:
        return f"the engine is not built ({', '.join(missing)} missing: `make tools`)"
    return None


def engine_label(version: str) -> str:
    return (
        f"pulumi {version} `preview --diff`, pulumi-kubernetes {PROVIDER_VERSION}, against Kubernetes "
        f"{KUBERNETES_VERSION} on loopback with the base deployed"
    )


def engine_preview(
    repo: Path,
    base_ref: str,
    stack: str,
    base_records: list[dict[str, Any]],
    head_records: list[dict[str, Any]],
    base_venv: Optional[Path] = None,
) -> EnginePreview:
    """The engine's `preview --diff` and plan of the working tree against the deployed base (its program run
    in `base_venv` when given)."""

    with tempfile.TemporaryDirectory(prefix="engine-diff-") as scratch, base_worktree(repo, base_ref) as (tree, _):
        work = Path(scratch)
        harness = Harness(work / "cluster", budget_seconds=900)
        harness.start()
        try:
            config = stack_config(stack, tree)
            context = ((config.get(f"{PROJECT_NAME}:kubernetes") or {}).get("cluster") or {}).get("context", "e2e")
            kubeconfig = harness.plane.kubeconfig_with_context(work / "kubeconfig", context)
            gpu_nodes = declared_gpu_nodes(config)
            nodes = [*stack_nodes(base_records, gpu_nodes), *stack_nodes(head_records, gpu_nodes)]
            harness.replace_nodes(list({n["metadata"]["name"]: n for n in nodes}.values()))
            project = Project.create(work / "pulumi", kubeconfig, tree, base_venv or REPO / ".venv")
            project.write_stack(stack, config)
            project.init(stack, {k: v for k, v in PLACEHOLDER_SECRETS.items() if f"{PROJECT_NAME}:{k}" not in config})
            project.up(stack)
            project.link(repo)
            project.write_stack(stack, stack_config(stack, repo))
            preview = project.preview(stack, check=False, diff=True)
            plan = engine_plan(preview.steps)
            version = project.workspace.pulumi_version
        except PulumiError as failed:
            return EnginePreview(engine_label("(failed)"), f"the engine could not preview: {failed}", ran=False)
        finally:
            harness.stop()
    text = preview.output
    if len(text) > PREVIEW_LIMIT:
        text = text[:PREVIEW_LIMIT] + "\n... (cut)"
    return EnginePreview(engine_label(version), text, plan)
