"""checkov's Kubernetes checks in the pack's gate: the offline runner judges rendered manifests with the
repository's checkov configs (.checkov/gate.yaml assigns one to each file) and reports each failed check as a
mandatory `checkov-kubernetes` violation. One checkov run over a directory holding a hardened workload, the
same privileged workload as a Pod, a Deployment and a CronJob (three API groups), and a model-download file
judged with the upstream recipes' config; the committed stacks pass the gate in `make lint`."""

from __future__ import annotations

import copy

import pytest
import yaml
from policy_helpers import REPO

from policy.nemotron_policies.checkov_gate import CheckovError, checkov_violations
from policy.nemotron_policies.cli import main

CHECKOV = REPO / ".venv-checkov" / "bin" / "checkov"
GATE = REPO / ".checkov" / "gate.yaml"
HARDENED_CONTAINER = {
    "name": "main",
    "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04",
    "imagePullPolicy": "Always",
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "runAsGroup": 10001,
        "seccompProfile": {"type": "RuntimeDefault"},
    },
    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
    "livenessProbe": {"exec": {"command": ["true"]}},
    "readinessProbe": {"exec": {"command": ["true"]}},
}
HARDENED_POD = {
    "automountServiceAccountToken": False,
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [HARDENED_CONTAINER],
}


def holder(kind: str, pod: dict) -> dict:
    api = {"Pod": "v1", "Deployment": "apps/v1", "CronJob": "batch/v1"}[kind]
    metadata = {"name": kind.lower(), "namespace": "ns"}
    if kind == "Pod":
        return {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": pod}
    template = {"metadata": {"labels": {"app": "a"}}, "spec": pod}
    if kind == "Deployment":
        spec: dict = {"selector": {"matchLabels": {"app": "a"}}, "template": template}
    else:
        spec = {
            "schedule": "0 * * * *",
            "jobTemplate": {"spec": {"template": {**template, "spec": {**pod, "restartPolicy": "Never"}}}},
        }
    return {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": spec}


@pytest.fixture(scope="module")
def gate(tmp_path_factory) -> list[str]:
    if not CHECKOV.exists():
        pytest.skip("checkov's virtualenv is not installed (make lint / make test install it)")
    manifests = tmp_path_factory.mktemp("manifests")
    privileged = copy.deepcopy(HARDENED_POD)
    privileged["containers"][0]["securityContext"] = {**HARDENED_CONTAINER["securityContext"], "privileged": True}
    (manifests / "00-hardened.yaml").write_text(yaml.safe_dump(holder("Deployment", HARDENED_POD)))
    for kind in ("Pod", "Deployment", "CronJob"):
        (manifests / f"01-{kind.lower()}-privileged.yaml").write_text(yaml.safe_dump(holder(kind, privileged)))
    download = copy.deepcopy(HARDENED_POD)
    del download["containers"][0]["resources"]  # the upstream recipe sets none: its config skips those checks
    (manifests / "05-job-ns-model-download.yaml").write_text(yaml.safe_dump(holder("Pod", download)))
    return [v.message for v in checkov_violations(manifests, GATE, CHECKOV)]


@pytest.mark.slow  # the real checkov over the manifests (the module's one run)
def test_a_hardened_workload_passes(gate):
    assert not [m for m in gate if m.startswith("00-hardened")]


@pytest.mark.slow  # the real checkov (the module's one run)
@pytest.mark.parametrize("kind", ["pod", "deployment", "cronjob"])
def test_a_privileged_container_fails_in_every_workload_kind(gate, kind):
    assert any(m.startswith(f"01-{kind}-privileged.yaml") and "CKV_K8S_16" in m for m in gate), gate


@pytest.mark.slow  # the real checkov (the module's one run)
def test_the_model_download_is_judged_with_the_upstream_recipes_config(gate):
    assert not [m for m in gate if m.startswith("05-job-ns-model-download")]


def test_missing_manifests_are_an_error(tmp_path):
    with pytest.raises(CheckovError, match="no such directory"):
        checkov_violations(tmp_path / "absent", GATE, CHECKOV)


def test_the_runner_takes_manifests_and_checkov_together(tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["--stack", "dev", str(tmp_path / "resources.json"), "--manifests", str(tmp_path)])
    assert exited.value.code == 2
