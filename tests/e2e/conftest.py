"""The end-to-end harness: a real control plane, the stand-in operator and storage, the real Pulumi CLI.

Run with `make e2e` (after `make tools`). Nothing here skips: missing binaries fail the session with the
command that builds them.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tools.e2e.control_plane import ControlPlane
from tools.e2e.kube import Kube
from tools.e2e.pulumi_cli import REPO, Project
from tools.e2e.stand_in_operator import stand_in_storage_class

CRD = REPO.parent / "shared" / "reference" / "dynamo-crds" / "nvidia.com_dynamographdeployments.yaml"
# The classes the committed stacks name for their model cache (dev: an existing EFS class; prod's
# existing-cluster shape: FSx for Lustre), provisioned here by the stand-in.
STAND_IN_CLASSES = ("efs-ap", "fsx-lustre")
BUDGET_SECONDS = 1500


class Cluster:
    def __init__(self, plane: ControlPlane, work: Path):
        self.plane = plane
        self.kube: Kube = plane.kube()
        self.work = work
        self.operator: subprocess.Popen[bytes] | None = None

    def start_operator(self) -> None:
        if self.operator is not None and self.operator.poll() is None:
            return
        log = open(self.work / "operator.log", "ab")  # noqa: SIM115 - closed with the process
        self.operator = subprocess.Popen(
            ["timeout", "-k", "5", str(BUDGET_SECONDS), sys.executable, "-m", "tools.e2e.stand_in_operator",
             "--server", self.plane.server, "--token", self.plane.token, "--deadline", str(BUDGET_SECONDS),
             *(a for name in STAND_IN_CLASSES for a in ("--storage-class", name))],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def stop_operator(self) -> None:
        if self.operator is not None and self.operator.poll() is None:
            self.operator.terminate()
            self.operator.wait(timeout=10)
        self.operator = None

    def replace_nodes(self, nodes: list[dict]) -> None:
        """Exactly these fake nodes (kwok makes them Ready)."""
        wanted = {n["metadata"]["name"] for n in nodes}
        for node in self.kube.list("Node"):
            if node["metadata"]["name"] not in wanted:
                self.kube.delete("Node", node["metadata"]["name"])
        for node in nodes:
            if self.kube.get("Node", node["metadata"]["name"]) is None:
                self.kube.create(node)
        self.kube.wait_for("fake nodes Ready", lambda: all(
            any(c["type"] == "Ready" and c["status"] == "True"
                for c in (self.kube.get("Node", name) or {}).get("status", {}).get("conditions", []))
            for name in wanted), timeout=60)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("control-plane")
    plane = ControlPlane(work, budget_seconds=BUDGET_SECONDS)
    try:
        plane.start()
        kube = plane.kube()
        kube.create(yaml.safe_load(CRD.read_text()))
        kube.wait_for("the DGD CRD to be established", lambda: any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (kube.get("CustomResourceDefinition", "dynamographdeployments.nvidia.com") or {})
            .get("status", {}).get("conditions", [])), timeout=60)
        for name in STAND_IN_CLASSES:
            kube.create(stand_in_storage_class(name))
        result = Cluster(plane, work)
        result.start_operator()
        yield result
        result.stop_operator()
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def project(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Project:
    work = tmp_path_factory.mktemp("pulumi")
    # The committed dev stack reaches its cluster through the kubeconfig context it names.
    kubeconfig = cluster.plane.kubeconfig_with_context(work / "kubeconfig", "nemotron-dev")
    return Project.create(work, kubeconfig)
