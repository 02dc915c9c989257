"""The processes of a loopback gateway run: the real LiteLLM proxy (from `.venv-gateway`, which `make
gateway-venv` builds) and the stand-ins of `backends.py`, each its own process so it can be killed (SIGKILL),
hung (SIGSTOP) and resumed (SIGCONT) like a pod; each dies with the test process (PR_SET_PDEATHSIG)."""

from __future__ import annotations

import copy
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

PROJECT_DIR = Path(__file__).resolve().parents[2]
GATEWAY_VENV = PROJECT_DIR / ".venv-gateway"
BACKENDS = Path(__file__).resolve().parent / "backends.py"
PR_SET_PDEATHSIG = 1
FAKE_AWS_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDLOOPBACKFAKE0000", "AWS_SECRET_ACCESS_KEY": "loopback-fake-secret"}


def litellm_executable() -> Path:
    executable = GATEWAY_VENV / "bin" / "litellm"
    if not executable.is_file():
        raise RuntimeError(
            f"{executable} is missing: run `make gateway-venv` (the pinned LiteLLM proxy, "
            "requirements-gateway.txt) before the gateway tests"
        )
    return executable


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_ready(url: str, deadline_seconds: float, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} not ready within {deadline_seconds} s:\n{log.read_text()[-4000:]}")


@dataclass
class Process:
    """One started process: its URL, and signals a test sends to it (by its own pid, nothing broader)."""

    name: str
    port: int
    popen: subprocess.Popen[bytes]
    log: Path
    command: list[str] = field(default_factory=list)
    ready_path: str = "/"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(10)

    def hang(self) -> None:
        self.popen.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.popen.send_signal(signal.SIGCONT)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the test process dies (Linux prctl PR_SET_PDEATHSIG)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def start(
    name: str,
    command: list[str],
    port: int,
    ready_path: str,
    workdir: Path,
    env: Optional[Mapping[str, str]] = None,
    ready_seconds: float = 10,
) -> Process:
    log = workdir / f"{name}.log"
    with log.open("ab") as sink:
        popen = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
    process = Process(name, port, popen, log, command, ready_path)
    try:
        wait_until_ready(f"{process.url}{ready_path}", ready_seconds, popen, log)
    except BaseException:
        process.kill()
        raise
    return process


def restart(process: Process, workdir: Path) -> Process:
    """The same command on the same port: a pod that came back."""
    process.kill()
    return start(process.name, process.command, process.port, process.ready_path, workdir)


def start_backend(kind: str, name: str, model: str, latency: float, workdir: Path, **flags: str) -> Process:
    """A `backends.py` stand-in (`openai` or `sagemaker`) on a free port; `flags` are its other options."""
    port = free_port()
    command = [sys.executable, str(BACKENDS), kind, "--port", str(port), "--model", model, "--latency", str(latency)]
    command += [item for flag, value in flags.items() for item in (f"--{flag.replace('_', '-')}", value)]
    safe = name.replace("/", "_").replace(":", "_")
    return start(
        f"{'backend' if kind == 'openai' else kind}-{safe}",
        command,
        port,
        "/health" if kind == "openai" else "/",
        workdir,
    )


def start_openai_backend(backend_id: str, model: str, latency: float, workdir: Path) -> Process:
    return start_backend("openai", backend_id, model, latency, workdir, backend_id=backend_id)


def start_sagemaker_runtime(endpoint: str, region: str, model: str, latency: float, workdir: Path) -> Process:
    keys = {
        "access_key": FAKE_AWS_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "secret_key": FAKE_AWS_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    }
    return start_backend("sagemaker", endpoint, model, latency, workdir, endpoint=endpoint, region=region, **keys)


def loopback_config(config: Mapping[str, Any], backend_urls: Mapping[str, str]) -> dict[str, Any]:
    """The generated config with each deployment (by `model_info.id`) sent to a local URL: a Dynamo
    frontend's `api_base`, a SageMaker endpoint's runtime (`sagemaker_base_url`, still SigV4-signed)."""
    rewritten = copy.deepcopy(dict(config))
    for deployment in rewritten["model_list"]:
        params, url = deployment["litellm_params"], backend_urls[deployment["model_info"]["id"]]
        if params["model"].startswith("sagemaker_chat/"):
            params["sagemaker_base_url"] = f"{url}/endpoints/{params['model'].split('/', 1)[1]}/invocations"
        else:
            params["api_base"] = f"{url}/v1"
    return rewritten


def start_proxy(config: Mapping[str, Any], master_key: str, workdir: Path) -> Process:
    """The real LiteLLM proxy on loopback, one worker, offline (local model cost map), fake AWS keys."""
    config_file = workdir / "litellm-config.yaml"
    config_file.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "LITELLM_MASTER_KEY": master_key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DISABLE_ADMIN_UI": "True",
        "LITELLM_LOG": os.environ.get("GATEWAY_LOOPBACK_LOG", "ERROR"),  # INFO/DEBUG to see routing decisions
        "NO_PROXY": "127.0.0.1,localhost",
        **FAKE_AWS_CREDENTIALS,
    }
    command = [str(litellm_executable()), "--config", str(config_file), "--host", "127.0.0.1", "--port", str(port)]
    return start(
        "litellm-proxy", [*command, "--num_workers", "1"], port, "/health/readiness", workdir, env, ready_seconds=90
    )
