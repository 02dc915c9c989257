"""The Kubernetes side of the preflight, for a stack on an existing cluster (`kubernetes.cluster.source:
kubeconfig`): what that cluster must already have for the first `up` to finish, read from what the stack
writes (its rendered objects), never from a list kept here: every API group and version it writes is served
(unless a Helm release of the stack installs it: `chartGroups` in tools/preflight/data/kubernetes.yaml) and the
Dynamo operator's version; every namespace it writes into exists; the model cache's StorageClass exists and is
ReadWriteMany; some node advertises the extended resources each pod requests on nodes the stack does not create.

The read-only client reaches the context the stack names in the kubeconfig it names (else `KUBECONFIG`, else
~/.kube/config), never the current context, with the standard library: the cluster's server and CA (or
`insecure-skip-tls-verify`), the user's token, token file, client certificate or `exec` plugin
(client.authentication.k8s.io, as `aws eks get-token`). An `auth-provider` or basic-auth user is bad input.
"""

from __future__ import annotations

import base64
import json
import os
import re
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Optional

import yaml

from serving_stack.config.types import quantity_value
from serving_stack.errors import bounded
from serving_stack.facts import load_facts
from serving_stack.names import PART_OF_LABEL, POOL_LABEL, PROJECT
from tools.preflight.facts import KubernetesFile, load_kubernetes
from tools.preflight.stack import Finding, PreflightStack, blocker, warning

JSON = dict[str, Any]
EXEC_TIMEOUT_SECONDS = 60
REQUEST_TIMEOUT_SECONDS = 30
CONTEXT_KEY = "kubernetes.cluster.context"
KUBECONFIG_KEY = "kubernetes.cluster.kubeconfigPath"
STORAGE_KEY = "modelCache.storageClassName"
STANDARD_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
# The Dynamo operator's Deployment as its Helm chart labels it (ai-dynamo/dynamo
# deploy/cloud/helm/platform/components/operator/templates/deployment.yaml), which passes the version to
# the manager as `--operator-version=`.
OPERATOR_SELECTOR = "app.kubernetes.io/part-of=dynamo-operator,control-plane=controller-manager"
OPERATOR_VERSION_ARG = "--operator-version="
POD_SECURITY_ENFORCE = "pod-security.kubernetes.io/enforce"
POD_SECURITY_ORDER = ("privileged", "baseline", "restricted")  # least to most strict
CHART_FILE = re.compile(r"^(?P<name>.+?)-\d+\.\d+\.\d+[^/]*\.tgz$")


class KubeInputError(Exception):
    """The kubeconfig, context or credentials cannot be used: bad input (exit 2), one line naming the key."""

    def __init__(self, key: str, problem: str):
        super().__init__(bounded(f"{key}: {problem}", 600, quote=False))


class KubeRequestError(Exception):
    def __init__(self, status: int, path: str, message: str):
        super().__init__(f"GET {path}: HTTP {status}: {bounded(message, 200, quote=False)}")
        self.status = status


def _short(error: object) -> str:
    return bounded(str(error), 200, quote=False)


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
            raise KubeInputError(CONTEXT_KEY, f"cannot reach {self.server}: {_short(error)}") from None


def kubeconfig_files(kubeconfig_path: Optional[str]) -> list[Path]:
    if kubeconfig_path:
        return [Path(kubeconfig_path).expanduser()]
    listed = os.environ.get("KUBECONFIG", "")
    return [Path(p).expanduser() for p in listed.split(os.pathsep) if p] or [Path.home() / ".kube" / "config"]


def _merged(files: list[Path]) -> dict[str, dict[str, tuple[JSON, Path]]]:
    """Named clusters, users and contexts across the files, each with the file it came from (its relative paths
    are relative to that file); the first file naming one wins, as kubectl merges KUBECONFIG."""
    merged: dict[str, dict[str, tuple[JSON, Path]]] = {"clusters": {}, "users": {}, "contexts": {}}
    for path in (f for f in files if f.is_file()):
        try:
            document = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            raise KubeInputError(KUBECONFIG_KEY, f"cannot read {path}: {_short(error)}") from None
        if not isinstance(document, dict):
            raise KubeInputError(KUBECONFIG_KEY, f"{path} is not a kubeconfig (a mapping)")
        for section, entries in merged.items():
            for entry in document.get(section) or []:
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    entries.setdefault(entry["name"], (dict(entry.get(section[:-1]) or {}), path.parent))
    return merged


def client_for(context_name: Optional[str], kubeconfig_path: Optional[str]) -> KubeClient:
    if not context_name:
        problem = "not set: the preflight reaches only a cluster the stack names, never the current context"
        raise KubeInputError(CONTEXT_KEY, problem)
    files = kubeconfig_files(kubeconfig_path)
    if kubeconfig_path and not files[0].is_file():
        raise KubeInputError(KUBECONFIG_KEY, f"{files[0]} is not a file")
    merged = _merged(files)
    if context_name not in merged["contexts"]:
        where, known = ", ".join(str(f) for f in files), ", ".join(sorted(merged["contexts"])) or "none"
        raise KubeInputError(CONTEXT_KEY, f"no context {context_name!r} in {where} (contexts: {known})")
    context, _ = merged["contexts"][context_name]
    cluster, base = merged["clusters"].get(str(context.get("cluster")), ({}, files[0].parent))
    user, user_base = merged["users"].get(str(context.get("user")), ({}, files[0].parent))
    if not cluster.get("server"):
        problem = f"context {context_name!r} names cluster {context.get('cluster')!r}, which has no server"
        raise KubeInputError(CONTEXT_KEY, problem)
    tls = _tls(cluster, base)
    credential = _credential(user, user_base, cluster)
    if credential.get("cert") and credential.get("key"):
        with tempfile.TemporaryDirectory() as directory:  # load_cert_chain reads files only: private, removed at once
            pems = [Path(directory) / "cert.pem", Path(directory) / "key.pem"]
            for path, text in zip(pems, (credential["cert"], credential["key"]), strict=True):
                path.touch(mode=0o600)
                path.write_text(text)
            tls.load_cert_chain(str(pems[0]), str(pems[1]))
    headers = {"Authorization": f"Bearer {credential['token']}"} if credential.get("token") else {}
    return KubeClient(str(cluster["server"]), tls, headers)


def _path(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _tls(cluster: JSON, base: Path) -> ssl.SSLContext:
    if cluster.get("insecure-skip-tls-verify"):
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        return context
    try:
        if cluster.get("certificate-authority-data"):
            return ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        if cluster.get("certificate-authority"):
            return ssl.create_default_context(cafile=str(_path(base, cluster["certificate-authority"])))
    except (OSError, ValueError, ssl.SSLError) as error:
        raise KubeInputError(CONTEXT_KEY, f"the cluster's CA cannot be read: {_short(error)}") from None
    return ssl.create_default_context()


def _credential(user: JSON, base: Path, cluster: JSON) -> dict[str, str]:
    """token, or cert + key (PEM text), from the user entry."""
    if user.get("auth-provider") or user.get("username"):
        kind = "auth-provider" if user.get("auth-provider") else "basic auth"
        problem = f"the context's user uses {kind}, which the preflight does not read; use an exec plugin or a token"
        raise KubeInputError(CONTEXT_KEY, problem)
    if user.get("exec"):
        return _exec_credential(user["exec"], cluster)
    if user.get("token"):
        return {"token": str(user["token"])}

    def pem(name: str) -> str:
        if user.get(f"{name}-data"):
            return base64.b64decode(user[f"{name}-data"]).decode()
        return _path(base, user[name]).read_text() if user.get(name) else ""

    try:
        if user.get("tokenFile"):
            return {"token": _path(base, user["tokenFile"]).read_text().strip()}
        cert, private = pem("client-certificate"), pem("client-key")
    except (OSError, ValueError) as error:
        raise KubeInputError(CONTEXT_KEY, f"the context's user credentials cannot be read: {_short(error)}") from None
    return {"cert": cert, "key": private} if cert and private else {}


def _exec_credential(spec: JSON, cluster: JSON) -> dict[str, str]:
    """Run the exec plugin as kubectl does (its env on top of ours; KUBERNETES_EXEC_INFO with the API version)."""
    info: JSON = {"apiVersion": spec.get("apiVersion", "client.authentication.k8s.io/v1"), "kind": "ExecCredential"}
    info["spec"] = {
        "interactive": False,
        **({"cluster": {"server": cluster.get("server")}} if spec.get("provideClusterInfo") else {}),
    }
    env = {**os.environ, **{e["name"]: str(e["value"]) for e in spec.get("env") or [] if isinstance(e, dict)}}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    command = [str(spec.get("command", "")), *(str(a) for a in spec.get("args") or [])]
    plugin = f"the credential plugin {command[0]!r}"
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=EXEC_TIMEOUT_SECONDS)
    except (OSError, subprocess.SubprocessError) as error:
        hint = f" ({spec['installHint']})" if spec.get("installHint") else ""
        raise KubeInputError(
            CONTEXT_KEY, f"{plugin} cannot run: {bounded(str(error), 160, quote=False)}{hint}"
        ) from None
    if result.returncode != 0:
        last = ([line for line in result.stderr.splitlines() if line.strip()] or [f"exit status {result.returncode}"])[
            -1
        ]
        raise KubeInputError(CONTEXT_KEY, f"{plugin} failed: {_short(last)}")
    try:
        status = json.loads(result.stdout)["status"]
    except (ValueError, KeyError, TypeError):
        raise KubeInputError(CONTEXT_KEY, f"{plugin} printed no ExecCredential status") from None
    if status.get("token"):
        return {"token": str(status["token"])}
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        return {"cert": str(status["clientCertificateData"]), "key": str(status["clientKeyData"])}
    raise KubeInputError(CONTEXT_KEY, f"{plugin} returned neither a token nor a client certificate")


UNREADABLE: JSON = {"unreadable": True}  # what `_get` returns for a refused request (compared by identity)


def _get(client: KubeClient, path: str, key: str, findings: list[Finding]) -> Optional[JSON]:
    """`client.get`, with a refusal (403, 500) reported as a warning and returned as `UNREADABLE`; 404 is None."""
    try:
        return client.get(path)
    except KubeRequestError as error:
        findings.append(warning(key, f"could not check: {error}", "grant the context's user read access and rerun"))
        return UNREADABLE


def kube_findings(stack: PreflightStack, client: KubeClient) -> list[Finding]:
    data = load_kubernetes()
    charts = [_chart_name(str(release.get("chart", ""))) for release in stack.releases]
    provided = {group for chart in charts for group in data.chartGroups.get(chart, ())}
    findings = _served_kinds(stack, client, data, provided)
    if "nvidia.com" not in provided:
        findings += _operator_version(client)
    findings += _namespaces(stack, client)
    findings += _serving_namespace(stack, client)
    if stack.plan.storage is None:
        findings += _storage_class(stack.config.modelCache.storageClassName, client, data)
    return findings + _extended_resources(stack, client, data)


def _chart_name(chart: str) -> str:
    match = CHART_FILE.match(chart.rsplit("/", 1)[-1])
    return match["name"] if match else chart


def _served_kinds(stack: PreflightStack, client: KubeClient, data: KubernetesFile, provided: set[str]) -> list[Finding]:
    findings: list[Finding] = []
    discovered: dict[str, Optional[set[str]]] = {}
    for api_version, kind in sorted({(str(o["apiVersion"]), str(o["kind"])) for o in stack.objects}):
        group, _, version = api_version.rpartition("/")
        if group in provided:
            continue
        guide = data.groupKeys.get(group)
        key = guide.key if guide else CONTEXT_KEY
        if api_version not in discovered:
            answer = _get(client, f"/apis/{group}/{version}" if group else f"/api/{version}", key, findings)
            if answer is UNREADABLE:
                continue
            discovered[api_version] = {r["kind"] for r in answer.get("resources", [])} if answer else None
        kinds = discovered[api_version]
        if kinds is not None and kind in kinds:
            continue
        listed = (_get(client, f"/apis/{group}", key, findings) or {}) if group else {}
        if listed is UNREADABLE:
            continue
        served = [str(v["version"]) for v in listed.get("versions", [])]
        writes = f"the stack writes {api_version} {kind}"
        if kinds is None and served:
            problem = f"the cluster serves {group} {', '.join(served)}, not {version}; {writes}"
        elif kinds is None:
            problem = f"the cluster serves no {group or 'core'} API; {writes}"
        else:
            problem = f"the cluster's {api_version} has no kind {kind}, which the stack writes"
        findings.append(blocker(key, problem, guide.fix if guide else f"install what serves {api_version} {kind}"))
    return findings


def _operator_version(client: KubeClient) -> list[Finding]:
    findings: list[Finding] = []
    key, query = "dynamo.platform.install", urllib.parse.urlencode({"labelSelector": OPERATOR_SELECTOR})
    answer = _get(client, f"/apis/apps/v1/deployments?{query}", key, findings)
    if answer is UNREADABLE:
        return findings
    deployments = (answer or {}).get("items", [])
    pinned = load_facts().platform.chart.version
    if not deployments:
        return [
            warning(
                key,
                f"no Dynamo operator Deployment found ({OPERATOR_SELECTOR}): nothing may reconcile the DGDs, and "
                "`up` would wait out each DGD's readiness budget",
                f"install the Dynamo platform {pinned} (catalog/platform.yaml) or check that its operator runs",
            )
        ]
    for deployment in deployments:
        where = f"{deployment['metadata'].get('namespace')}/{deployment['metadata']['name']}"
        containers = deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
        arguments = [str(a) for c in containers for a in [*c.get("args", []), *c.get("command", [])]]
        version = next((a[len(OPERATOR_VERSION_ARG) :] for a in arguments if a.startswith(OPERATOR_VERSION_ARG)), None)
        if version is None:
            silent = f"the Dynamo operator {where} does not say its version"
            findings.append(warning(key, silent, f"the stack is written for {pinned}"))
        elif version.removeprefix("v") != pinned:
            problem = (
                f"the Dynamo operator {where} is version {version}; the stack is written for the platform {pinned} "
                "(catalog/platform.yaml)"
            )
            fix = f"upgrade the platform to {pinned}, or check that {version} serves every field the DGDs set"
            findings.append(warning(key, problem, fix))
    return findings


def _namespaces(stack: PreflightStack, client: KubeClient) -> list[Finding]:
    created = {str(o["metadata"]["name"]) for o in stack.objects if o["kind"] == "Namespace"}
    created |= {str(r.get("namespace")) for r in stack.releases if r.get("createNamespace")}
    used = {str(o["metadata"]["namespace"]) for o in stack.objects if o["metadata"].get("namespace")}
    used |= {str(r["namespace"]) for r in stack.releases if r.get("namespace")}
    config, findings = stack.config, list[Finding]()
    keys = {
        "monitoring.namespace": config.monitoring.namespace if config.monitoring.enabled else None,
        "dynamo.platform.namespace": config.dynamo.platform.namespace,
        "kubernetes.namespace": config.kubernetes.namespace,
    }
    for namespace in sorted(used - created):
        key = next((k for k, value in keys.items() if value == namespace), CONTEXT_KEY)
        if _get(client, f"/api/v1/namespaces/{namespace}", key, findings) is not None:  # found, or unreadable
            continue
        problem = f"namespace {namespace} does not exist; the stack writes into it but does not create it"
        fix = f"kubectl create namespace {namespace}, or set {key} to a namespace that exists"
        findings.append(blocker(key, problem, fix))
    return findings


def _serving_namespace(stack: PreflightStack, client: KubeClient) -> list[Finding]:
    """The serving namespace as pulumi-kubernetes >= 4.29 meets it: one the stack creates must not exist unless
    it is this project's (the create fails `already exists`; the stack never adopts), and one the cluster owns
    must enforce the Pod Security level `kubernetes.namespacePodSecurity` states (what the policy pack judged)."""
    kubernetes, findings = stack.config.kubernetes, list[Finding]()
    key = "kubernetes.createNamespace" if kubernetes.createNamespace else "kubernetes.namespacePodSecurity"
    live = _get(client, f"/api/v1/namespaces/{kubernetes.namespace}", key, findings)
    if live is UNREADABLE:
        return findings
    labels = ((live or {}).get("metadata") or {}).get("labels") or {}
    if live is not None and kubernetes.createNamespace and labels.get(PART_OF_LABEL) != PROJECT:
        problem = (
            f"namespace {kubernetes.namespace} already exists and is not this project's: the first `up` fails "
            "`already exists` (the stack never adopts a namespace)"
        )
        fix = "set kubernetes.createNamespace: false (and kubernetes.namespacePodSecurity), or another namespace"
        findings.append(blocker(key, problem, fix))
    enforced, declared = labels.get(POD_SECURITY_ENFORCE), kubernetes.namespacePodSecurity or "baseline"
    if live is None or kubernetes.createNamespace or enforced is None or enforced == declared:
        return findings
    stricter = enforced not in POD_SECURITY_ORDER or POD_SECURITY_ORDER.index(enforced) > POD_SECURITY_ORDER.index(
        declared
    )
    report = blocker if stricter else warning
    problem = (
        f"namespace {kubernetes.namespace} enforces Pod Security {bounded(enforced, quote=False)} (its {POD_SECURITY_ENFORCE} "
        f"label); the stack states {declared}" + (": its pods would be refused" if stricter else "")
    )
    fix = (
        f"set kubernetes.namespacePodSecurity: {bounded(enforced, quote=False)} if that admits the stack's pods, or ask the "
        "cluster admin for the level the stack states"
    )
    findings.append(report(key, problem, fix))
    return findings


def _storage_class(name: str, client: KubeClient, data: KubernetesFile) -> list[Finding]:
    findings: list[Finding] = []
    found = _get(client, f"/apis/storage.k8s.io/v1/storageclasses/{name}", STORAGE_KEY, findings)
    listing = (
        (_get(client, "/apis/storage.k8s.io/v1/storageclasses", STORAGE_KEY, findings) or {}) if found is None else {}
    )
    if found is UNREADABLE or listing is UNREADABLE:
        return findings
    provisioner, provisioners = str(found.get("provisioner", "")) if found else "", data.provisioners
    if found is None:
        classes = ", ".join(sorted(str(c["metadata"]["name"]) for c in listing.get("items", []))) or "none"
        problem = f"no StorageClass {name} on the cluster (it has {classes})"
        fix = "create a ReadWriteMany class of that name (EFS, FSx for Lustre, NFS), or set the name of one"
    elif provisioner in provisioners.readWriteMany:
        return []
    elif provisioner in provisioners.readWriteOnceOnly:
        problem = (
            f"StorageClass {name} provisions with {provisioner}, which has no ReadWriteMany volumes "
            f"({provisioners.readWriteOnceOnly[provisioner]}): every GPU node mounts the one model cache"
        )
        fix = "set a ReadWriteMany class (EFS, FSx for Lustre, NFS)"
    else:
        problem = (
            f"StorageClass {name} provisions with {provisioner}, which the preflight does not know to support "
            "ReadWriteMany (tools/preflight/data/kubernetes.yaml)"
        )
        return [warning(STORAGE_KEY, problem, "check that its volumes mount ReadWriteMany on every GPU node")]
    return [blocker(STORAGE_KEY, problem, fix)]


def _pod_specs(value: Any) -> Iterator[JSON]:
    """Every pod spec inside an object (a DGD's components, a Deployment's or Job's template, ...)."""
    if isinstance(value, dict) and isinstance(value.get("containers"), list):
        yield value
    elif isinstance(value, (dict, list)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _pod_specs(item)


def _extended(containers: list[JSON]) -> dict[str, Decimal]:
    wanted: dict[str, Decimal] = {}
    for container in containers:
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            for name, amount in (resources.get(section) or {}).items():
                if name not in STANDARD_RESOURCES and not name.startswith("hugepages-") and "/" in name:
                    wanted[name] = max(wanted.get(name, Decimal(0)), quantity_value(str(amount)))
    return wanted


def _requests(spec: JSON) -> dict[str, Decimal]:
    """What one pod needs of each extended resource: its containers together, or its largest init container."""
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        for name, amount in _extended([container]).items():
            total[name] = total.get(name, Decimal(0)) + amount
    for name, amount in _extended(spec.get("initContainers") or []).items():
        total[name] = max(total.get(name, Decimal(0)), amount)
    return total


def _pools_selected(spec: JSON) -> set[str]:
    pools = {str(v) for k, v in (spec.get("nodeSelector") or {}).items() if k == POOL_LABEL}
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") == POOL_LABEL and expression.get("operator") == "In":
                pools |= {str(v) for v in expression.get("values") or []}
    return pools


def _owner_key(stack: PreflightStack, obj: JSON) -> str:
    """`targets[i]` for a target's DGD (its index in the stack file), else the context."""
    target_ids = [t.id for t in stack.config.targets]
    for planned in stack.plan.serving.targets:
        same = obj["kind"] == planned.dgd.get("kind") and obj["metadata"]["name"] == planned.dgd["metadata"]["name"]
        if same and planned.selected.id in target_ids:
            return f"targets[{target_ids.index(planned.selected.id)}]"
    return CONTEXT_KEY


def _extended_resources(stack: PreflightStack, client: KubeClient, data: KubernetesFile) -> list[Finding]:
    managed = {p.name for p in stack.plan.pools if p.managed}
    wanted = [  # (key, what, requests); nodes the stack creates come with their plugins
        (_owner_key(stack, obj), f"{obj['kind']} {obj['metadata']['name']}", _requests(spec))
        for obj in stack.objects
        for spec in _pod_specs(obj.get("spec"))
        if _requests(spec) and not (_pools_selected(spec) and _pools_selected(spec) <= managed)
    ]
    if not wanted:
        return []
    findings: list[Finding] = []
    answer = _get(client, "/api/v1/nodes", CONTEXT_KEY, findings)
    if answer is UNREADABLE:
        return findings
    nodes = (answer or {}).get("items", [])
    advertised = [
        {
            name: quantity_value(str(amount))
            for name, amount in ((n.get("status") or {}).get("allocatable") or {}).items()
        }
        for n in nodes
    ]
    reported: set[tuple[str, str]] = set()
    for key, what, requests in wanted:
        if any(all(node.get(r, Decimal(0)) >= amount for r, amount in requests.items()) for node in advertised):
            continue
        for resource, amount in sorted(requests.items()):
            most = max((node.get(resource, Decimal(0)) for node in advertised), default=Decimal(0))
            if most >= amount or (key, resource) in reported:
                continue
            reported.add((key, resource))
            plugin = data.extendedResources.get(resource)
            by = plugin.advertisedBy if plugin else "the device plugin that provides it"
            found = f"at most {most:g} on one node" if most else "no node advertises it"
            problem = f"{what} requests {amount:g} {resource} per pod; {found} (of {len(nodes)} nodes): its pods would stay Pending"
            fix = f"run {by} (a node group scaled to zero advertises nothing: scale it up first), or choose a target the nodes can hold"
            findings.append(blocker(key, problem, fix))
        if not any(k == key for k, _ in reported):
            problem = f"{what} requests {', '.join(f'{a:g} {r}' for r, a in sorted(requests.items()))} per pod; no one node advertises all of them"
            fix = "add nodes that have them together, or choose a target the nodes can hold"
            findings.append(blocker(key, problem, fix))
            reported.add((key, "*"))
    return findings
