"""A read-only Kubernetes client for the preflight: the cluster of the context the stack names, from the
kubeconfig it names (else `KUBECONFIG`, else ~/.kube/config), never the current context.

Standard library only. It reads what kubectl reads for the common cases: the cluster's server, CA
(`certificate-authority` file or `-data`) or `insecure-skip-tls-verify`, and the user's `token`,
`tokenFile`, client certificate and key (files or `-data`), or an `exec` credential plugin
(client.authentication.k8s.io v1 / v1beta1: `aws eks get-token`, `kubelogin`), run once with a time
bound. An `auth-provider` or basic-auth user is refused as bad input (exit 2), like a missing context.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from serving_stack.errors import bounded

JSON = dict[str, Any]
EXEC_TIMEOUT_SECONDS = 60
REQUEST_TIMEOUT_SECONDS = 30
CONTEXT_KEY = "kubernetes.cluster.context"
KUBECONFIG_KEY = "kubernetes.cluster.kubeconfigPath"


class KubeInputError(Exception):
    """The kubeconfig, context or credentials cannot be used: bad input (exit 2), one line naming the key."""

    def __init__(self, key: str, problem: str):
        super().__init__(bounded(f"{key}: {problem}", 600, quote=False))


class KubeRequestError(Exception):
    def __init__(self, status: int, path: str, message: str):
        super().__init__(f"GET {path}: HTTP {status}: {bounded(message, 200, quote=False)}")
        self.status = status


def kubeconfig_files(kubeconfig_path: Optional[str]) -> list[Path]:
    if kubeconfig_path:
        return [Path(kubeconfig_path).expanduser()]
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        return [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
    return [Path.home() / ".kube" / "config"]


def _merged(files: list[Path]) -> tuple[dict[str, dict[str, JSON]], dict[str, Path]]:
    """Named clusters, users and contexts across the files, the first file naming one winning (as kubectl
    merges KUBECONFIG), and the file each came from (relative paths in it are relative to that file)."""
    merged: dict[str, dict[str, JSON]] = {"clusters": {}, "users": {}, "contexts": {}}
    origin: dict[str, Path] = {}
    for path in files:
        if not path.is_file():
            continue
        try:
            document = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            raise KubeInputError(
                KUBECONFIG_KEY, f"cannot read {path}: {bounded(str(error), 200, quote=False)}"
            ) from None
        if not isinstance(document, dict):
            raise KubeInputError(KUBECONFIG_KEY, f"{path} is not a kubeconfig (a mapping)")
        for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for entry in document.get(section) or []:
                if (
                    isinstance(entry, dict)
                    and isinstance(entry.get("name"), str)
                    and entry["name"] not in merged[section]
                ):
                    merged[section][entry["name"]] = dict(entry.get(inner) or {})
                    origin[f"{section}/{entry['name']}"] = path
    return merged, origin


@dataclass
class KubeClient:
    server: str
    context: ssl.SSLContext
    headers: dict[str, str]

    def get(self, path: str) -> Optional[JSON]:
        """The object at `path`, or None when the server says 404."""
        request = urllib.request.Request(
            self.server.rstrip("/") + path, headers={"Accept": "application/json", **self.headers}
        )
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=REQUEST_TIMEOUT_SECONDS) as response:
                return dict(json.loads(response.read().decode()))
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise KubeRequestError(error.code, path, error.read().decode(errors="replace")) from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise KubeInputError(
                CONTEXT_KEY, f"cannot reach {self.server}: {bounded(str(error), 200, quote=False)}"
            ) from None


def client_for(context_name: Optional[str], kubeconfig_path: Optional[str]) -> KubeClient:
    if not context_name:
        raise KubeInputError(
            CONTEXT_KEY, "not set: the preflight reaches only a cluster the stack names, never the current context"
        )
    files = kubeconfig_files(kubeconfig_path)
    if kubeconfig_path and not files[0].is_file():
        raise KubeInputError(KUBECONFIG_KEY, f"{files[0]} is not a file")
    merged, origin = _merged(files)
    key = CONTEXT_KEY
    context = merged["contexts"].get(context_name)
    if context is None:
        where = ", ".join(str(f) for f in files)
        raise KubeInputError(
            key, f"no context {context_name!r} in {where} (contexts: {', '.join(sorted(merged['contexts'])) or 'none'})"
        )
    cluster = merged["clusters"].get(str(context.get("cluster")))
    user = merged["users"].get(str(context.get("user")), {})
    if cluster is None or not cluster.get("server"):
        raise KubeInputError(
            key, f"context {context_name!r} names cluster {context.get('cluster')!r}, which has no server"
        )
    base = origin.get(f"clusters/{context.get('cluster')}", files[0]).parent
    user_base = origin.get(f"users/{context.get('user')}", files[0]).parent
    tls = _tls(cluster, base, key)
    headers: dict[str, str] = {}
    credential = _credential(user, user_base, cluster, key)
    if credential.get("token"):
        headers["Authorization"] = f"Bearer {credential['token']}"
    if credential.get("cert") and credential.get("key"):
        _load_client_certificate(tls, credential["cert"], credential["key"])
    return KubeClient(str(cluster["server"]), tls, headers)


def _path(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _tls(cluster: JSON, base: Path, key: str) -> ssl.SSLContext:
    if cluster.get("insecure-skip-tls-verify"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        if cluster.get("certificate-authority-data"):
            return ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        if cluster.get("certificate-authority"):
            return ssl.create_default_context(cafile=str(_path(base, cluster["certificate-authority"])))
    except (OSError, ValueError, ssl.SSLError) as error:
        raise KubeInputError(key, f"the cluster's CA cannot be read: {bounded(str(error), 200, quote=False)}") from None
    return ssl.create_default_context()


def _credential(user: JSON, base: Path, cluster: JSON, key: str) -> dict[str, str]:
    """token, or cert + key (PEM text), from the user entry."""
    if user.get("auth-provider") or user.get("username"):
        kind = "auth-provider" if user.get("auth-provider") else "basic auth"
        raise KubeInputError(
            key, f"the context's user uses {kind}, which the preflight does not read; use an exec plugin or a token"
        )
    if user.get("exec"):
        return _exec_credential(user["exec"], cluster, key)
    if user.get("token"):
        return {"token": str(user["token"])}
    try:
        if user.get("tokenFile"):
            return {"token": _path(base, user["tokenFile"]).read_text().strip()}
        cert = _pem(user, "client-certificate", base)
        private = _pem(user, "client-key", base)
    except (OSError, ValueError) as error:
        raise KubeInputError(
            key, f"the context's user credentials cannot be read: {bounded(str(error), 200, quote=False)}"
        ) from None
    return {"cert": cert, "key": private} if cert and private else {}


def _pem(user: JSON, name: str, base: Path) -> str:
    if user.get(f"{name}-data"):
        return base64.b64decode(user[f"{name}-data"]).decode()
    if user.get(name):
        return _path(base, user[name]).read_text()
    return ""


def _exec_credential(spec: JSON, cluster: JSON, key: str) -> dict[str, str]:
    """Run the exec plugin as kubectl does (its env on top of ours; KUBERNETES_EXEC_INFO with the API version)."""
    api_version = spec.get("apiVersion", "client.authentication.k8s.io/v1")
    info = {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    if spec.get("provideClusterInfo"):
        info["spec"]["cluster"] = {"server": cluster.get("server")}
    env = {**os.environ, **{e["name"]: str(e["value"]) for e in spec.get("env") or [] if isinstance(e, dict)}}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    command = [str(spec.get("command", "")), *(str(a) for a in spec.get("args") or [])]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=EXEC_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.SubprocessError) as error:
        hint = f" ({spec['installHint']})" if spec.get("installHint") else ""
        raise KubeInputError(
            key, f"the credential plugin {command[0]!r} cannot run: {bounded(str(error), 160, quote=False)}{hint}"
        ) from None
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit status {result.returncode}"
        raise KubeInputError(key, f"the credential plugin {command[0]!r} failed: {bounded(last, 200, quote=False)}")
    try:
        status = json.loads(result.stdout)["status"]
    except (ValueError, KeyError, TypeError):
        raise KubeInputError(key, f"the credential plugin {command[0]!r} printed no ExecCredential status") from None
    if status.get("token"):
        return {"token": str(status["token"])}
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        return {"cert": str(status["clientCertificateData"]), "key": str(status["clientKeyData"])}
    raise KubeInputError(key, f"the credential plugin {command[0]!r} returned neither a token nor a client certificate")


def _load_client_certificate(context: ssl.SSLContext, cert: str, key: str) -> None:
    """`load_cert_chain` reads files only: the PEMs go to a private temporary directory, removed at once."""
    with tempfile.TemporaryDirectory() as directory:
        cert_file, key_file = Path(directory) / "cert.pem", Path(directory) / "key.pem"
        for path, text in ((cert_file, cert), (key_file, key)):
            path.touch(mode=0o600)
            path.write_text(text)
        context.load_cert_chain(str(cert_file), str(key_file))
