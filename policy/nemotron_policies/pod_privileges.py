"""The host and kernel privileges a pod spec takes (the pod half of the `least-privilege` rule).

No `privileged` container, no `allowPrivilegeEscalation: true`, no escape-prone capability
(`PRIVILEGED_CAPABILITIES`), no host namespace (`hostPID` / `hostNetwork` / `hostIPC`), no Windows host
process, no host port, no SELinux type outside the container types (`spc_t` runs unconfined), and no
hostPath volume (in a pod, or a PersistentVolume's `hostPath` or `local` path) outside the allow-list of node
paths. The SELinux types and the host-port rule are those of the Pod Security Standards' baseline level
(`pod_security.py` holds the whole table with its source).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Any

from .kinds import kubernetes_objects
from .pods import loose_container_pods, pod_specs
from .values import UNKNOWN, as_list, dig, text
from .workloads import container_label, containers, volume_mounts

HOST_NAMESPACES = ("hostPID", "hostNetwork", "hostIPC")
# Pod Security Standards, baseline "SELinux": the container types a pod may ask for (kubernetes.io/docs/
# concepts/security/pod-security-standards/, Kubernetes v1.31+ adds container_engine_t).
ALLOWED_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
PV_HOST_PATH_FIELDS = ("hostPath", "local")
PRIVILEGED_CAPABILITIES = frozenset(
    {
        "SYS_ADMIN",
        "ALL",
        "SYS_MODULE",
        "SYS_PTRACE",
        "SYS_RAWIO",
        "SYS_BOOT",
        "NET_ADMIN",
        "BPF",
        "PERFMON",
        "DAC_READ_SEARCH",
        "MAC_ADMIN",
        "SYSLOG",
    }
)
# The only hostPath the stack's own pods mount: the node-local prewarm readiness directory (the prewarm
# DaemonSet writes it, workers read it; `serving_stack/plan/model_cache.py` STATE_DIR, held equal by a test).
DEFAULT_ALLOWED_HOST_PATHS = ["/var/lib/nemotron-prewarm"]
READ_ONLY_SUFFIX = ":ro"


def _within(path: str, prefix: str) -> bool:
    """Is `path` the directory `prefix` or under it (whole path components, `..` never allowed)?"""
    if ".." in path.split("/"):
        return False
    path, prefix = posixpath.normpath(path), posixpath.normpath(prefix)
    return prefix == "/" or path == prefix or path.startswith(prefix.rstrip("/") + "/")


def host_path_allowed(path: str, read_only: bool, allowed: list[str]) -> bool:
    """Does an allow-list entry admit this hostPath mount? `<prefix>` admits any mount under it,
    `<prefix>:ro` only read-only ones."""
    for entry in allowed:
        ro = entry.endswith(READ_ONLY_SUFFIX)
        prefix = entry[: -len(READ_ONLY_SUFFIX)] if ro else entry
        if prefix.startswith("/") and _within(path, prefix) and (read_only or not ro):
            return True
    return False


def _host_path_problems(spec: Any, owner: str, allowed: list[str]) -> Iterator[str]:
    for volume in as_list(dig(spec, "volumes")):
        path = dig(volume, "hostPath", "path")
        if path is UNKNOWN or dig(volume, "hostPath") is None:
            continue
        name = text(dig(volume, "name")) or "?"
        mounts = volume_mounts(spec, name)
        read_only = all(m.get("readOnly") is True for m in mounts)
        shown = path if isinstance(path, str) else "(no path)"
        if isinstance(path, str) and any(m.get("readOnly") is UNKNOWN for m in mounts):
            read_only = True  # undecided: report only what no mount mode would make allowed
        if not isinstance(path, str) or not host_path_allowed(path, read_only, allowed):
            yield (
                f"{owner} mounts hostPath {shown} (volume {name}) {'read-only' if read_only else 'read-write'}; "
                f"hostPath volumes outside allowedHostPaths ({', '.join(allowed) or 'none'}) expose the node"
            )


def _selinux_problems(context: Any, owner: str) -> Iterator[str]:
    selinux_type = dig(context, "seLinuxOptions", "type")
    if isinstance(selinux_type, str) and selinux_type not in ALLOWED_SELINUX_TYPES:
        yield (
            f"{owner} sets seLinuxOptions.type {selinux_type} (only {', '.join(sorted(ALLOWED_SELINUX_TYPES - {''}))} "
            "keep the container confined)"
        )


def _windows_host_process(context: Any) -> bool:
    return dig(context, "windowsOptions", "hostProcess") is True


def pod_privileges(resource_type: str, props: Any, allowed_host_paths: list[str]) -> Iterator[str]:
    for obj in kubernetes_objects(resource_type, props):
        if obj.group != "" or obj.kind != "PersistentVolume":
            continue
        for field in PV_HOST_PATH_FIELDS:
            if dig(obj.body, "spec", field) is None:
                continue
            path = dig(obj.body, "spec", field, "path")
            if path is not UNKNOWN and not (
                isinstance(path, str) and host_path_allowed(path, False, allowed_host_paths)
            ):
                yield f"PersistentVolume {obj.name or '?'} is a {field} volume ({path}) outside allowedHostPaths"
    for pod in pod_specs(resource_type, props) + loose_container_pods(resource_type, props):
        for field in HOST_NAMESPACES:
            if dig(pod.spec, field) is True:
                yield f"{pod.owner} sets {field}: true"
        if _windows_host_process(dig(pod.spec, "securityContext")):
            yield f"{pod.owner} sets securityContext.windowsOptions.hostProcess: true (a process on the node)"
        yield from _selinux_problems(dig(pod.spec, "securityContext"), pod.owner)
        yield from _host_path_problems(pod.spec, pod.owner, allowed_host_paths)
        for container in containers(pod.spec):
            context = dig(container, "securityContext")
            if dig(context, "privileged") is True:
                yield f"{container_label(container, pod)} is privileged"
            yield from _selinux_problems(context, container_label(container, pod))
            for port in as_list(dig(container, "ports")):
                host_port = dig(port, "hostPort")
                if host_port not in (None, 0, UNKNOWN):
                    yield (
                        f"{container_label(container, pod)} binds hostPort {host_port} (the node's network "
                        "namespace); use a Service"
                    )
            if _windows_host_process(context):
                yield f"{container_label(container, pod)} sets windowsOptions.hostProcess: true (a process on the node)"
            if dig(context, "allowPrivilegeEscalation") is True:
                yield f"{container_label(container, pod)} sets allowPrivilegeEscalation: true"
            added = {
                str(c).upper().removeprefix("CAP_")
                for c in as_list(dig(context, "capabilities", "add"))
                if c is not UNKNOWN
            }
            for capability in sorted(added & PRIVILEGED_CAPABILITIES):
                yield f"{container_label(container, pod)} adds capability {capability}"
