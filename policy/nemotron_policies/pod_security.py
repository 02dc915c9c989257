"""The Kubernetes Pod Security Standards as a table: each control of the `baseline` and `restricted` levels,
the fields it reads and the values it allows, as the Kubernetes docs "Pod Security Standards"
(kubernetes.io/docs/concepts/security/pod-security-standards/, Kubernetes v1.34) state them and the
PodSecurity admission controller (k8s.io/pod-security-admission/policy, `latest` version) checks them.

No kept implementation of the standards is published on PyPI (a search of the index for pod-security,
PSS and PodSecurity finds none maintained), so the pack carries the table; `restricted` includes every
`baseline` control. A control's fields are read on the pod (`spec.securityContext`, `spec.volumes`...) and on
every container, init and ephemeral containers included, as the admission controller reads them; unknown
values pass (the value is judged when it is known).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .values import UNKNOWN, as_dict, as_list, dig, text
from .workloads import containers

LEVELS = ("privileged", "baseline", "restricted")
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
RESTRICTED_VOLUME_TYPES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
# Keys of a volume that are not its source.
VOLUME_META_KEYS = frozenset({"name"})
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


@dataclass(frozen=True)
class Pod:
    spec: Any
    annotations: Any = None


def _contexts(pod: Pod) -> Iterator[tuple[str, Any]]:
    """(owner, securityContext) of the pod and of each container."""
    yield "pod", dig(pod.spec, "securityContext")
    for container in containers(pod.spec):
        yield f"container {text(dig(container, 'name')) or '?'}", dig(container, "securityContext")


def _host_process(pod: Pod) -> Iterator[str]:
    for owner, context in _contexts(pod):
        if dig(context, "windowsOptions", "hostProcess") is True:
            yield f"{owner} sets windowsOptions.hostProcess: true"


def _host_namespaces(pod: Pod) -> Iterator[str]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if dig(pod.spec, field) is True:
            yield f"pod sets {field}: true"


def _privileged(pod: Pod) -> Iterator[str]:
    for owner, context in _contexts(pod):
        if owner != "pod" and dig(context, "privileged") is True:
            yield f"{owner} sets privileged: true"


def _added_capabilities(context: Any) -> list[str]:
    return [str(c) for c in as_list(dig(context, "capabilities", "add")) if c is not UNKNOWN]


def _baseline_capabilities(pod: Pod) -> Iterator[str]:
    for owner, context in _contexts(pod):
        extra = [c for c in _added_capabilities(context) if c not in BASELINE_CAPABILITIES]
        if owner != "pod" and extra:
            yield f"{owner} adds {', '.join(extra)}"


def _host_path(pod: Pod) -> Iterator[str]:
    for volume in as_list(dig(pod.spec, "volumes")):
        if dig(volume, "hostPath") is not None:
            yield f"volume {text(dig(volume, 'name')) or '?'} is a hostPath volume"


def _host_ports(pod: Pod) -> Iterator[str]:
    for container in containers(pod.spec):
        for port in as_list(dig(container, "ports")):
            if dig(port, "hostPort") not in (None, 0, UNKNOWN):
                yield f"container {text(dig(container, 'name')) or '?'} binds hostPort {dig(port, 'hostPort')}"


def _apparmor(pod: Pod) -> Iterator[str]:
    for owner, context in _contexts(pod):
        kind = dig(context, "appArmorProfile", "type")
        if isinstance(kind, str) and kind not in ("RuntimeDefault", "Localhost"):
            yield f"{owner} sets appArmorProfile.type {kind}"
    for key, value in as_dict(pod.annotations).items():
        if (
            str(key).startswith(APPARMOR_ANNOTATION)
            and isinstance(value, str)
            and not (value == "runtime/default" or value.startswith("localhost/"))
        ):
            yield f"annotation {key} is {value}"


def _selinux(pod: Pod) -> Iterator[str]:
    for owner, context in _contexts(pod):
        options = dig(context, "seLinuxOptions")
        selinux_type = dig(options, "type")
        if isinstance(selinux_type, str) and selinux_type not in SELINUX_TYPES:
            yield f"{owner} sets seLinuxOptions.type {selinux_type}"
        for field in ("user", "role"):
            if text(dig(options, field)):
                yield f"{owner} sets seLinuxOptions.{field}"


def _proc_mount(pod: Pod) -> Iterator[str]:
    for owner, context in _contexts(pod):
        mount = dig(context, "procMount")
        if owner != "pod" and isinstance(mount, str) and mount != "Default":
            yield f"{owner} sets procMount {mount}"


def _seccomp_type(context: Any) -> Any:
    return dig(context, "seccompProfile", "type")


def _baseline_seccomp(pod: Pod) -> Iterator[str]:
    for owner, context in _contexts(pod):
        if _seccomp_type(context) == "Unconfined":
            yield f"{owner} sets seccompProfile.type Unconfined"


def _sysctls(pod: Pod) -> Iterator[str]:
    for sysctl in as_list(dig(pod.spec, "securityContext", "sysctls")):
        name = dig(sysctl, "name")
        if isinstance(name, str) and name not in SAFE_SYSCTLS:
            yield f"pod sets sysctl {name}"


def _volume_types(pod: Pod) -> Iterator[str]:
    for volume in as_list(dig(pod.spec, "volumes")):
        if not isinstance(volume, dict):
            continue
        sources = [k for k in volume if k not in VOLUME_META_KEYS and volume[k] is not None]
        for source in sources:
            if source not in RESTRICTED_VOLUME_TYPES:
                yield f"volume {text(volume.get('name')) or '?'} is a {source} volume"


def _windows(pod: Pod) -> bool:
    return bool(dig(pod.spec, "os", "name") == "windows")


def _privilege_escalation(pod: Pod) -> Iterator[str]:
    if _windows(pod):
        return
    for container in containers(pod.spec):
        value = dig(container, "securityContext", "allowPrivilegeEscalation")
        if value is not False and value is not UNKNOWN:
            yield f"container {text(dig(container, 'name')) or '?'} does not set allowPrivilegeEscalation: false"


def _run_as_non_root(pod: Pod) -> Iterator[str]:
    pod_level = dig(pod.spec, "securityContext", "runAsNonRoot")
    for owner, context in _contexts(pod):
        value = dig(context, "runAsNonRoot")
        if value is False:
            yield f"{owner} sets runAsNonRoot: false"
        elif owner != "pod" and value is None and pod_level not in (True, UNKNOWN):
            yield f"{owner} does not set runAsNonRoot: true (nor does the pod)"


def _run_as_user(pod: Pod) -> Iterator[str]:
    for owner, context in _contexts(pod):
        if dig(context, "runAsUser") == 0:
            yield f"{owner} sets runAsUser: 0"


def _restricted_seccomp(pod: Pod) -> Iterator[str]:
    pod_level = _seccomp_type(dig(pod.spec, "securityContext"))
    for owner, context in _contexts(pod):
        value = _seccomp_type(context)
        if owner != "pod" and value is None and pod_level is None:
            yield f"{owner} sets no seccompProfile (nor does the pod); set RuntimeDefault or Localhost"
        elif isinstance(value, str) and value not in ("RuntimeDefault", "Localhost") and value != "Unconfined":
            yield f"{owner} sets seccompProfile.type {value}"


def _restricted_capabilities(pod: Pod) -> Iterator[str]:
    if _windows(pod):
        return
    for container in containers(pod.spec):
        context = dig(container, "securityContext")
        name = f"container {text(dig(container, 'name')) or '?'}"
        dropped = dig(context, "capabilities", "drop")
        if dropped is not UNKNOWN and "ALL" not in [str(c) for c in as_list(dropped)]:
            yield f"{name} does not drop ALL capabilities"
        extra = [c for c in _added_capabilities(context) if c != "NET_BIND_SERVICE"]
        if extra:
            yield f"{name} adds {', '.join(extra)} (restricted allows only NET_BIND_SERVICE)"


@dataclass(frozen=True)
class Control:
    level: str
    name: str
    check: Callable[[Pod], Iterator[str]]


# The standard's controls in its order (the docs' tables): baseline, then what restricted adds.
CONTROLS = (
    Control("baseline", "HostProcess", _host_process),
    Control("baseline", "Host Namespaces", _host_namespaces),
    Control("baseline", "Privileged Containers", _privileged),
    Control("baseline", "Capabilities", _baseline_capabilities),
    Control("baseline", "HostPath Volumes", _host_path),
    Control("baseline", "Host Ports", _host_ports),
    Control("baseline", "AppArmor", _apparmor),
    Control("baseline", "SELinux", _selinux),
    Control("baseline", "/proc Mount Type", _proc_mount),
    Control("baseline", "Seccomp", _baseline_seccomp),
    Control("baseline", "Sysctls", _sysctls),
    Control("restricted", "Volume Types", _volume_types),
    Control("restricted", "Privilege Escalation", _privilege_escalation),
    Control("restricted", "Running as Non-root", _run_as_non_root),
    Control("restricted", "Running as Non-root user", _run_as_user),
    Control("restricted", "Seccomp", _restricted_seccomp),
    Control("restricted", "Capabilities", _restricted_capabilities),
)


def pod_security_violations(pod: Pod, level: str) -> Iterator[tuple[Control, str]]:
    """(control, finding) for each control of `level` (and the levels below it) the pod breaks."""
    if level not in LEVELS:
        level = "restricted"
    applied = LEVELS[1 : LEVELS.index(level) + 1]
    for control in CONTROLS:
        if control.level in applied:
            for finding in control.check(pod):
                yield control, finding
