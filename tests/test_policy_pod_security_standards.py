"""pod-security-standards: the table of Pod Security Standard controls, each with a pod that breaks it and
one that meets it at its level, generated across every workload kind and object form; the level comes from
the namespace's enforce label (fail closed on a bad value), the pack's defaultLevel elsewhere, and only the
serving namespace's component may enforce privileged. The committed renders pass (test_policy_renders.py),
and without the serving namespace's label their RDMA workers and prewarm pods break baseline."""

from __future__ import annotations

import pytest
from policy_helpers import POLICY, check_stack, evaluate, of_type, pod_forms, recording, resource, urn_of
from pulumi_policy import PolicyResource

from policy.nemotron_policies.pod_security import CONTROLS

NAMESPACE = "kubernetes:core/v1:Namespace"
IMAGE = "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"
HARDENED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def pod(context: dict | None = None, init: dict | None = None, **spec: object) -> dict:
    """A pod that meets `restricted`, changed by `context` (its container's securityContext), `init` (an init
    container's) and pod-level `spec` fields."""
    main = {"name": "main", "image": IMAGE, "securityContext": {**HARDENED, **(context or {})}}
    first = {"name": "init", "image": IMAGE, "securityContext": {**HARDENED, **(init or {})}}
    return {"containers": [main], "initContainers": [first], **spec}


# control name -> (level, breaking pod, a near pod that meets the control)
TABLE = {
    "HostProcess": (
        "baseline",
        pod(securityContext={"windowsOptions": {"hostProcess": True}}),
        pod(securityContext={"windowsOptions": {"hostProcess": False}}),
    ),
    "Host Namespaces": ("baseline", pod(hostIPC=True), pod(hostIPC=False)),
    "Privileged Containers": ("baseline", pod(init={"privileged": True}), pod(init={"privileged": False})),
    "Capabilities (baseline)": (
        "baseline",
        pod({"capabilities": {"add": ["IPC_LOCK"], "drop": ["ALL"]}}),
        pod({"capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}}),
    ),
    "HostPath Volumes": (
        "baseline",
        pod(volumes=[{"name": "h", "hostPath": {"path": "/tmp"}}]),
        pod(volumes=[{"name": "e", "emptyDir": {}}]),
    ),
    "Host Ports": (
        "baseline",
        pod(
            {},
            None,
            containers=[
                {
                    "name": "m",
                    "image": IMAGE,
                    "securityContext": HARDENED,
                    "ports": [{"containerPort": 80, "hostPort": 80}],
                }
            ],
        ),
        pod(
            {},
            None,
            containers=[{"name": "m", "image": IMAGE, "securityContext": HARDENED, "ports": [{"containerPort": 80}]}],
        ),
    ),
    "AppArmor": (
        "baseline",
        pod({"appArmorProfile": {"type": "Unconfined"}}),
        pod({"appArmorProfile": {"type": "RuntimeDefault"}}),
    ),
    "SELinux": (
        "baseline",
        pod(securityContext={"seLinuxOptions": {"type": "spc_t"}}),
        pod(securityContext={"seLinuxOptions": {"type": "container_t"}}),
    ),
    "SELinux (role)": (
        "baseline",
        pod({"seLinuxOptions": {"role": "sysadm_r"}}),
        pod({"seLinuxOptions": {"level": "s0"}}),
    ),
    "/proc Mount Type": ("baseline", pod({"procMount": "Unmasked"}), pod({"procMount": "Default"})),
    "Seccomp (baseline)": (
        "baseline",
        pod(init={"seccompProfile": {"type": "Unconfined"}}),
        pod(init={"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}),
    ),
    "Sysctls": (
        "baseline",
        pod(securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}),
        pod(securityContext={"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]}),
    ),
    "Volume Types": (
        "restricted",
        pod(volumes=[{"name": "n", "nfs": {"server": "s", "path": "/"}}]),
        pod(volumes=[{"name": "c", "persistentVolumeClaim": {"claimName": "x"}}]),
    ),
    "Privilege Escalation": ("restricted", pod({"allowPrivilegeEscalation": None}), pod()),
    "Running as Non-root": ("restricted", pod(init={"runAsNonRoot": False}), pod()),
    "Running as Non-root user": ("restricted", pod({"runAsUser": 0}), pod({"runAsUser": 1000})),
    "Seccomp (restricted)": (
        "restricted",
        pod({"seccompProfile": None}),
        pod({"seccompProfile": None}, securityContext={"seccompProfile": {"type": "RuntimeDefault"}}),
    ),
    "Capabilities (restricted)": (
        "restricted",
        pod({"capabilities": {"drop": ["NET_RAW"]}}),
        pod({"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}),
    ),
}


def namespace(level: str | None, name: str = "ns", parent_type: str = "nemotron:kubernetes:ServingNamespace"):
    labels = {} if level is None else {"pod-security.kubernetes.io/enforce": level}
    ns = resource(NAMESPACE, {"metadata": {"name": name, "labels": labels}}, f"{name}-namespace")
    return PolicyResource(
        ns.resource_type,
        ns.props,
        urn_of(NAMESPACE, f"{name}-namespace", parent_type=parent_type),
        ns.name,
        ns.opts,
        None,
        None,
        [],
        {},
    )


def findings(props_by_type: list[tuple[str, object]], level: str | None, config: dict | None = None) -> list[str]:
    resources = [namespace(level)] + [resource(t, p, f"w{i}") for i, (t, p) in enumerate(props_by_type)]
    return [m for m, _ in check_stack("pod-security-standards", resources, config)]


def test_every_control_of_the_standard_is_in_the_table():
    assert {c.name for c in CONTROLS} == {name.split(" (")[0] for name in TABLE}


@pytest.mark.parametrize("name", TABLE)
def test_each_control_is_broken_in_every_workload_form_at_its_level(name):
    level, breaking, _ = TABLE[name]
    forms = pod_forms(breaking)
    missed = [label for label, token, props in forms if not findings([(token, props)], level)]
    assert (len(forms), missed) == (9 * 6, [])
    if level == "restricted":
        assert findings([(forms[0][1], forms[0][2])], "baseline") == []


@pytest.mark.parametrize("name", TABLE)
def test_the_near_pod_meets_the_control_at_restricted(name):
    _, _, meeting = TABLE[name]
    for label, token, props in pod_forms(meeting):
        assert findings([(token, props)], "restricted") == [], label


def test_the_privileged_level_checks_nothing_and_a_bad_level_fails_closed():
    _, breaking, _ = TABLE["Privileged Containers"]
    token = "kubernetes:core/v1:Pod"
    props = {"metadata": {"name": "p", "namespace": "ns"}, "spec": breaking}
    assert findings([(token, props)], "privileged") == []
    _, restricted_only, _ = TABLE["Running as Non-root"]
    assert findings([(token, {**props, "spec": restricted_only})], "Baseline")  # not a level: restricted


def test_unlabelled_and_foreign_namespaces_get_the_default_level():
    _, breaking, _ = TABLE["HostPath Volumes"]
    for ns in ("ns", "elsewhere"):
        props = {"metadata": {"name": "p", "namespace": ns}, "spec": breaking}
        assert findings([("kubernetes:core/v1:Pod", props)], None)
        assert findings([("kubernetes:core/v1:Pod", props)], None, {"defaultLevel": "privileged"}) == []
    exempt = {"metadata": {"name": "p", "namespace": "kube-system"}, "spec": breaking}
    assert findings([("kubernetes:core/v1:Pod", exempt)], None) == []


def test_only_the_serving_namespace_component_may_enforce_privileged():
    other = namespace("privileged", "scratch", parent_type="nemotron:kubernetes:Operability")
    reported = check_stack("pod-security-standards", [other])
    assert [m for m, _ in reported] == [
        "Namespace scratch enforces the privileged Pod Security level (no checks at all); only the namespaces of "
        "privilegedNamespaceComponents may: enforce baseline or restricted"
    ]
    assert check_stack("pod-security-standards", [namespace("privileged", "nemotron")]) == []


def test_without_its_label_the_serving_namespace_breaks_baseline_only_in_workers_and_prewarm():
    resources = recording("prod")
    for ns in of_type(resources, NAMESPACE):
        ns.inputs["metadata"].get("labels", {}).pop("pod-security.kubernetes.io/enforce", None)
    messages = [v.message for v in evaluate(resources, stack="prod", policies=[POLICY["pod-security-standards"]])]
    assert messages and all(
        "Capabilities: container main adds IPC_LOCK, SYS_RESOURCE" in m or "hostPath" in m for m in messages
    )
    assert not any("gateway" in m or "operability" in m for m in messages)
