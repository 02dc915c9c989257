"""The end-to-end harness for the scenarios: a real control plane, the stand-in operator and storage
(tools/e2e/harness.py), and the real Pulumi CLI against a local backend (tools.e2e.engine.py).

Run with `make e2e` (after `make tools`). Nothing here skips: missing binaries fail the session with the
command that builds them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tools.e2e.engine import Project
from tools.e2e.harness import Harness

BUDGET_SECONDS = 1500


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    harness = Harness(tmp_path_factory.mktemp("control-plane"), budget_seconds=BUDGET_SECONDS).start()
    try:
        yield harness
    finally:
        harness.stop()


@pytest.fixture(scope="module")
def project(cluster: Harness, tmp_path_factory: pytest.TempPathFactory) -> Project:
    work = tmp_path_factory.mktemp("pulumi")
    # The committed dev stack reaches its cluster through the kubeconfig context it names.
    kubeconfig = cluster.plane.kubeconfig_with_context(work / "kubeconfig", "nemotron-dev")
    return Project.create(work, kubeconfig)
