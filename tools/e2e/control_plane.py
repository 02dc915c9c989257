"""A real Kubernetes control plane on loopback for the end-to-end scenarios.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built by `make tools`) run as they do in
any cluster; kwok gives the fake nodes a kubelet's lifecycle (Ready nodes with leases, Ready pods,
completed Job pods). Every process listens on 127.0.0.1 only, runs under `timeout` (so it ends by itself
even if the harness dies) and is stopped by `stop()`, which the harness calls in a `finally`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from tools.e2e.kube import Kube

TOOLS_BIN = Path(__file__).resolve().parents[2] / ".tools" / "bin"
KUBERNETES_VERSION = "v1.35.4"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ControlPlane:
    """`budget_seconds` bounds every process it starts; `work` holds data, certificates and logs."""

    work: Path
    budget_seconds: int = 1800
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    server: str = ""

    def kube(self) -> Kube:
        return Kube(self.server, self.token)

    def spawn(self, name: str, args: list[str], cwd: Optional[Path] = None) -> None:
        """Start `name` under `timeout`, logging to `<name>.log` (appended to when it is started again)."""
        log = open(self.work / f"{name}.log", "ab")  # noqa: SIM115 - the process owns it until stop()
        self.processes[name] = subprocess.Popen(
            ["timeout", "-k", "5", str(self.budget_seconds), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=cwd,
        )

    def _alive(self) -> bool:
        """True, after making sure no process of the control plane has died (its log tail if one has)."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                tail = (self.work / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {process.returncode}:\n{tail}")
        return True

    def start(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        bin_ = TOOLS_BIN
        programs = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
        missing = [b for b in programs if not (bin_ / b).exists()]
        if missing:
            raise RuntimeError(f"missing {', '.join(missing)} in {bin_}: run `make tools`")
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        self.spawn(
            "etcd",
            [
                str(bin_ / "etcd"),
                "--data-dir",
                str(self.work / "etcd"),
                "--unsafe-no-fsync",
                "--listen-client-urls",
                f"http://127.0.0.1:{etcd_port}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{etcd_port}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer_port}",
                "--listen-metrics-urls",
                f"http://127.0.0.1:{free_port()}",
            ],
        )
        key = self.work / "service-account.key"
        subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
        (self.work / "tokens.csv").write_text(f'{self.token},admin,admin,"system:masters"\n')
        certs = self.work / "certs"
        self.spawn(
            "kube-apiserver",
            [
                str(bin_ / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                f"--cert-dir={certs}",
                f"--token-auth-file={self.work / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={key}",
                f"--service-account-signing-key-file={key}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--enable-priority-and-fairness=false",
                "--endpoint-reconciler-type=none",
            ],
        )
        self.server = f"https://127.0.0.1:{api_port}"
        kube = self.kube()

        def ready() -> bool:
            self._alive()
            try:
                return bool(kube.request("GET", "/readyz") == "ok")
            except Exception:
                return False

        kube.wait_for("kube-apiserver /readyz", ready, timeout=120)
        common = [f"--kubeconfig={self.kubeconfig_with_context(self.work / 'kubeconfig', 'e2e')}"]
        self.spawn(
            "kube-controller-manager",
            [
                str(bin_ / "kube-controller-manager"),
                *common,
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                f"--service-account-private-key-file={key}",
                f"--root-ca-file={certs / 'apiserver.crt'}",
                "--use-service-account-credentials=false",
                "--concurrent-deployment-syncs=10",
                "--node-monitor-grace-period=120s",
            ],
        )
        self.spawn(
            "kube-scheduler",
            [
                str(bin_ / "kube-scheduler"),
                *common,
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
            ],
        )
        self.spawn(
            "kwok",
            [
                str(bin_ / "kwok"),
                *common,
                "--manage-all-nodes=true",
                f"--config={bin_ / 'kwok-stages.yaml'}",
                "--node-lease-duration-seconds=40",
                "--cidr=10.244.0.0/16",
                "--node-ip=127.0.0.1",
            ],
        )
        # The default ServiceAccount appears once the controller manager runs: pods need it.
        kube.wait_for(
            "the default ServiceAccount",
            lambda: self._alive() and kube.get("ServiceAccount", "default", "default"),
            timeout=120,
        )

    def kubeconfig_with_context(self, path: Path, context: str) -> Path:
        """A kubeconfig whose context has the name a stack file asks for (`kubernetes.cluster.context`)."""
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: e2e\n  cluster:\n    server: {self.server}\n    insecure-skip-tls-verify: true\n"
            f"users:\n- name: admin\n  user:\n    token: {self.token}\n"
            f"contexts:\n- name: {context}\n  context:\n    cluster: e2e\n    user: admin\n"
            f"current-context: {context}\n"
        )
        return path

    def stop(self, *names: str) -> None:
        """Stop the processes `names` (by default every one)."""
        stopping = [self.processes.pop(name) for name in names or list(self.processes) if name in self.processes]
        for process in stopping:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in stopping:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
