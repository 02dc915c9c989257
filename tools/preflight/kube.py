"""The Kubernetes side of the preflight, for a stack on an existing cluster (`kubernetes.cluster.source:
kubeconfig`): what that cluster must already have for the first `up` to finish, read from what the stack
writes (the objects of its render), never from a list kept here.

- every API group and version the stack writes is served (the DGD's `nvidia.com` version, the
  `monitoring.coreos.com` kinds), unless a Helm release of the same stack installs it
  (tools/preflight/data/kubernetes.yaml, `chartGroups`); the Dynamo operator's version where it can be read;
- every namespace the stack writes into exists, unless the stack creates it;
- the StorageClass `modelCache.storageClassName` exists (unless the stack creates it) and its provisioner
  supports ReadWriteMany (data: `provisioners`);
- for every pod the stack writes that lands on nodes the stack does not create, some node advertises the
  extended resources it requests (`nvidia.com/gpu`, `vpc.amazonaws.com/efa`, `rdma/ib`), in that amount.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Optional

from serving_stack.config.types import quantity_value
from serving_stack.facts import load_facts
from serving_stack.names import POOL_LABEL
from tools.preflight.facts import KubernetesFile, load_kubernetes
from tools.preflight.findings import Finding, blocker, warning
from tools.preflight.kube_client import CONTEXT_KEY, KubeClient, KubeRequestError
from tools.preflight.stack import PreflightStack

JSON = dict[str, Any]
STANDARD_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
# The Dynamo operator's Deployment as its Helm chart labels it (ai-dynamo/dynamo
# deploy/cloud/helm/platform/components/operator/templates/deployment.yaml), which passes the version to
# the manager as `--operator-version=`.
OPERATOR_SELECTOR = "app.kubernetes.io/part-of=dynamo-operator,control-plane=controller-manager"
OPERATOR_VERSION_ARG = "--operator-version="
CHART_FILE = re.compile(r"^(?P<name>.+?)-\d+\.\d+\.\d+[^/]*\.tgz$")
STORAGE_KEY = "modelCache.storageClassName"


def kube_findings(stack: PreflightStack, client: KubeClient) -> list[Finding]:
    data = load_kubernetes()
    provided = _provided_groups(stack, data)
    findings = _served_kinds(stack, client, data, provided)
    if "nvidia.com" not in provided:
        findings += _operator_version(client)
    findings += _namespaces(stack, client)
    if stack.plan.storage is None:
        findings += _storage_class(stack.config.modelCache.storageClassName, client, data)
    findings += _extended_resources(stack, client, data)
    return findings


def _get(client: KubeClient, path: str, key: str, findings: list[Finding]) -> Optional[JSON]:
    """`client.get`, with a refusal (403, 500) reported as a warning; 404 is None."""
    try:
        return client.get(path)
    except KubeRequestError as error:
        findings.append(warning(key, f"could not check: {error}", "grant the context's user read access and rerun"))
        raise _UnreadableError from None


class _UnreadableError(Exception):
    pass


def _chart_name(release: JSON) -> str:
    chart = str(release.get("chart", ""))
    match = CHART_FILE.match(chart.rsplit("/", 1)[-1])
    return match["name"] if match else chart


def _provided_groups(stack: PreflightStack, data: KubernetesFile) -> set[str]:
    return {group for release in stack.releases for group in data.chartGroups.get(_chart_name(release), ())}


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def _served_kinds(stack: PreflightStack, client: KubeClient, data: KubernetesFile, provided: set[str]) -> list[Finding]:
    findings: list[Finding] = []
    written = sorted({(str(o["apiVersion"]), str(o["kind"])) for o in stack.objects})
    discovered: dict[str, Optional[set[str]]] = {}
    for api_version, kind in written:
        group, version = _group_version(api_version)
        if group in provided:
            continue
        guide = data.groupKeys.get(group)
        key = guide.key if guide else CONTEXT_KEY
        try:
            if api_version not in discovered:
                path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
                answer = _get(client, path, key, findings)
                discovered[api_version] = {r["kind"] for r in (answer or {}).get("resources", [])} if answer else None
            kinds = discovered[api_version]
            if kinds is not None and kind in kinds:
                continue
            served = _served_versions(client, group, key, findings) if group else []
        except _UnreadableError:
            continue
        if kinds is None and served:
            problem = (
                f"the cluster serves {group} {', '.join(served)}, not {version}; the stack writes {api_version} {kind}"
            )
        elif kinds is None:
            problem = f"the cluster serves no {group or 'core'} API; the stack writes {api_version} {kind}"
        else:
            problem = f"the cluster's {api_version} has no kind {kind}, which the stack writes"
        findings.append(blocker(key, problem, guide.fix if guide else f"install what serves {api_version} {kind}"))
    return findings


def _served_versions(client: KubeClient, group: str, key: str, findings: list[Finding]) -> list[str]:
    answer = _get(client, f"/apis/{group}", key, findings)
    return [str(v["version"]) for v in (answer or {}).get("versions", [])]


def _operator_version(client: KubeClient) -> list[Finding]:
    findings: list[Finding] = []
    key = "dynamo.platform.install"
    query = urllib.parse.urlencode({"labelSelector": OPERATOR_SELECTOR})
    try:
        answer = _get(client, f"/apis/apps/v1/deployments?{query}", key, findings)
    except _UnreadableError:
        return findings
    pinned = load_facts().platform.chart.version
    deployments = (answer or {}).get("items", [])
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
        version = _operator_version_of(deployment)
        if version is None:
            findings.append(
                warning(
                    key, f"the Dynamo operator {where} does not say its version", f"the stack is written for {pinned}"
                )
            )
        elif version.removeprefix("v") != pinned:
            findings.append(
                warning(
                    key,
                    f"the Dynamo operator {where} is version {version}; the stack is written for the platform {pinned} "
                    "(catalog/platform.yaml)",
                    f"upgrade the platform to {pinned}, or check that {version} serves every field the DGDs set",
                )
            )
    return findings


def _operator_version_of(deployment: JSON) -> Optional[str]:
    for container in deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        for arg in [*container.get("args", []), *container.get("command", [])]:
            if str(arg).startswith(OPERATOR_VERSION_ARG):
                return str(arg)[len(OPERATOR_VERSION_ARG) :]
    return None


def _namespace_key(stack: PreflightStack, namespace: str) -> str:
    config = stack.config
    for key, value in (
        ("monitoring.namespace", config.monitoring.namespace if config.monitoring.enabled else None),
        ("dynamo.platform.namespace", config.dynamo.platform.namespace),
        ("kubernetes.namespace", config.kubernetes.namespace),
    ):
        if value == namespace:
            return key
    return CONTEXT_KEY


def _namespaces(stack: PreflightStack, client: KubeClient) -> list[Finding]:
    created = {str(o["metadata"]["name"]) for o in stack.objects if o["kind"] == "Namespace"}
    created |= {str(r.get("namespace")) for r in stack.releases if r.get("createNamespace")}
    used = {str(o["metadata"]["namespace"]) for o in stack.objects if o["metadata"].get("namespace")}
    used |= {str(r["namespace"]) for r in stack.releases if r.get("namespace")}
    findings: list[Finding] = []
    for namespace in sorted(used - created):
        key = _namespace_key(stack, namespace)
        try:
            if _get(client, f"/api/v1/namespaces/{namespace}", key, findings) is not None:
                continue
        except _UnreadableError:
            continue
        findings.append(
            blocker(
                key,
                f"namespace {namespace} does not exist; the stack writes into it but does not create it",
                f"kubectl create namespace {namespace}, or set {key} to a namespace that exists",
            )
        )
    return findings


def _storage_class(name: str, client: KubeClient, data: KubernetesFile) -> list[Finding]:
    findings: list[Finding] = []
    try:
        found = _get(client, f"/apis/storage.k8s.io/v1/storageclasses/{name}", STORAGE_KEY, findings)
        if found is None:
            listing = _get(client, "/apis/storage.k8s.io/v1/storageclasses", STORAGE_KEY, findings) or {}
    except _UnreadableError:
        return findings
    if found is None:
        classes = sorted(str(c["metadata"]["name"]) for c in listing.get("items", []))
        return [
            blocker(
                STORAGE_KEY,
                f"no StorageClass {name} on the cluster (it has {', '.join(classes) or 'none'})",
                "create a ReadWriteMany class of that name (EFS, FSx for Lustre, NFS), or set the name of one",
            )
        ]
    provisioner = str(found.get("provisioner", ""))
    if provisioner in data.provisioners.readWriteMany:
        return []
    if provisioner in data.provisioners.readWriteOnceOnly:
        return [
            blocker(
                STORAGE_KEY,
                f"StorageClass {name} provisions with {provisioner}, which has no ReadWriteMany volumes "
                f"({data.provisioners.readWriteOnceOnly[provisioner]}): every GPU node mounts the one model cache",
                "set a ReadWriteMany class (EFS, FSx for Lustre, NFS)",
            )
        ]
    return [
        warning(
            STORAGE_KEY,
            f"StorageClass {name} provisions with {provisioner}, which the preflight does not know to support "
            "ReadWriteMany (tools/preflight/data/kubernetes.yaml)",
            "check that its volumes mount ReadWriteMany on every GPU node",
        )
    ]


def _pod_specs(value: Any) -> Iterator[JSON]:
    """Every pod spec inside an object (a DGD's components, a Deployment's or Job's template, ...)."""
    if isinstance(value, dict):
        if isinstance(value.get("containers"), list):
            yield value
            return
        for item in value.values():
            yield from _pod_specs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _pod_specs(item)


def _extended(containers: list[JSON]) -> dict[str, Decimal]:
    wanted: dict[str, Decimal] = {}
    for container in containers:
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            for name, amount in (resources.get(section) or {}).items():
                if name in STANDARD_RESOURCES or name.startswith("hugepages-") or "/" not in name:
                    continue
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
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
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
    wanted: list[tuple[str, str, dict[str, Decimal]]] = []  # (key, what, requests)
    for obj in stack.objects:
        for spec in _pod_specs(obj.get("spec")):
            pools = _pools_selected(spec)
            requests = _requests(spec)
            if not requests or (pools and pools <= managed):  # nodes the stack creates come with their plugins
                continue
            wanted.append((_owner_key(stack, obj), f"{obj['kind']} {obj['metadata']['name']}", requests))
    if not wanted:
        return []
    findings: list[Finding] = []
    try:
        nodes = (_get(client, "/api/v1/nodes", CONTEXT_KEY, findings) or {}).get("items", [])
    except _UnreadableError:
        return findings
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
            findings.append(
                blocker(
                    key,
                    f"{what} requests {amount:g} {resource} per pod; {found} (of {len(nodes)} nodes): its pods would stay Pending",
                    f"run {by} (a node group scaled to zero advertises nothing: scale it up first), or choose a target the nodes can hold",
                )
            )
        if not any(k == key for k, _ in reported):
            findings.append(
                blocker(
                    key,
                    f"{what} requests {', '.join(f'{a:g} {r}' for r, a in sorted(requests.items()))} per pod; no one node advertises all of them",
                    "add nodes that have them together, or choose a target the nodes can hold",
                )
            )
            reported.add((key, "*"))
    return findings
