"""The end-to-end harness: a control plane on loopback with what the stacks expect of a cluster.

`Harness` starts the control plane (tools/e2e/control_plane.py), installs the DGD CRD from
`../shared/reference/dynamo-crds`, the StorageClasses the committed stacks name (provisioned by the
stand-in), serves the operator's DGD admission rules as a validating webhook (tools/e2e/admission.py) and
runs the stand-in operator (tools/e2e/stand_in_operator.py). Used by the scenarios
(tests/e2e) and by `make diff`'s engine preview (tools/e2e/engine_diff.py). Every process is bounded by
`budget_seconds` and stopped by `stop()`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import yaml

from tools.e2e.admission import Webhook
from tools.e2e.control_plane import ControlPlane
from tools.e2e.kube import Kube
from tools.e2e.stand_in_operator import stand_in_storage_class

REPO = Path(__file__).resolve().parents[2]
CRD = REPO.parent / "shared" / "reference" / "dynamo-crds" / "nvidia.com_dynamographdeployments.yaml"
# The classes the committed stacks name for their model cache (dev: an existing EFS class; prod's
# existing-cluster shape: FSx for Lustre), provisioned here by the stand-in.
STAND_IN_CLASSES = ("efs-ap", "fsx-lustre")


# The Prometheus operator's CRDs a stack's monitoring objects need on a cluster running its own Prometheus
# (`monitoring.prometheus.install: false`): the vendored upstream ones (schemas/crds/PROVENANCE.md), so the API
# server validates and prunes the stack's rules and monitors as that cluster's does.
def monitoring_crds() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted((REPO / "schemas/crds").glob("monitoring.coreos.com_*.yaml"))]


MONITORING_NAMESPACE = "monitoring"  # the committed stacks' `monitoring.namespace` (its default)


def _condition(obj: Optional[dict[str, Any]], kind: str) -> bool:
    """Whether the object's status has condition `kind` True."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _same_node(live: dict[str, Any], node: dict[str, Any]) -> bool:
    """Whether a live node has the labels, taints and capacity of a wanted one (else it is recreated)."""
    return (
        node["metadata"]["labels"].items() <= live["metadata"].get("labels", {}).items()
        and (live["spec"].get("taints") or []) == (node["spec"].get("taints") or [])
        and live["status"].get("capacity") == node["status"]["capacity"]
    )


class Harness:
    def __init__(self, work: Path, budget_seconds: int = 1500):
        self.work = work
        self.budget_seconds = budget_seconds
        self.plane = ControlPlane(work, budget_seconds=budget_seconds)
        self.webhook: Optional[Webhook] = None

    @property
    def kube(self) -> Kube:
        return self.plane.kube()

    def start(self) -> Harness:
        try:
            self.plane.start()
            kube = self.kube
            crds = [yaml.safe_load(CRD.read_text()), *monitoring_crds()]
            for crd in crds:
                kube.create(crd)
            names = [crd["metadata"]["name"] for crd in crds]
            kube.wait_for(
                f"the CRDs {', '.join(names)} to be established",
                lambda: all(_condition(kube.get("CustomResourceDefinition", n), "Established") for n in names),
                timeout=60 * len(names),  # a minute each, as when they were awaited one by one
            )
            for name in STAND_IN_CLASSES:
                kube.create(stand_in_storage_class(name))
            # ... and the namespace that Prometheus runs in, where a stack puts its rules and dashboards.
            kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MONITORING_NAMESPACE}})
            self.webhook = Webhook(self.work)
            kube.create(self.webhook.configuration())
            self.start_operator()
        except BaseException:
            self.stop()
            raise
        return self

    def start_operator(self) -> None:
        operator = self.plane.processes.get("operator")
        if operator is not None and operator.poll() is None:
            return
        flags = ["--server", self.plane.server, "--token", self.plane.token, "--deadline", str(self.budget_seconds)]
        classes = [a for name in STAND_IN_CLASSES for a in ("--storage-class", name)]
        self.plane.spawn("operator", [sys.executable, "-m", "tools.e2e.stand_in_operator", *flags, *classes], REPO)

    def stop_operator(self) -> None:
        self.plane.stop("operator")

    def replace_nodes(self, nodes: list[dict[str, Any]]) -> None:
        """Exactly these fake nodes, Ready (kwok runs them)."""
        kube, wanted = self.kube, {n["metadata"]["name"]: n for n in nodes}
        stale = [
            live["metadata"]["name"]
            for live in kube.list("Node")
            if live["metadata"]["name"] not in wanted or not _same_node(live, wanted[live["metadata"]["name"]])
        ]
        for name in stale:
            kube.delete("Node", name)
        kube.wait_for("replaced nodes to be gone", lambda: all(kube.get("Node", n) is None for n in stale), timeout=60)
        for node in nodes:
            if kube.get("Node", node["metadata"]["name"]) is None:
                kube.create(node)

        kube.wait_for(
            "fake nodes Ready", lambda: all(_condition(kube.get("Node", n), "Ready") for n in wanted), timeout=60
        )

    def stop(self) -> None:
        self.stop_operator()
        if self.webhook is not None:
            self.webhook.stop()
            self.webhook = None
        self.plane.stop()
