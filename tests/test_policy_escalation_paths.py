"""least-privilege against the escalation paths of the Kubernetes RBAC good-practices page and the pod fields
the baseline Pod Security Standard forbids beside privileged mode: reading every Secret, the kubelet API
through `nodes/proxy`, pod creation and Secret writes where pods may run privileged (`restrictedNamespaces`),
bindings to the groups everyone is in, SELinux `spc_t`, host ports and `local` PersistentVolumes on node
paths. Each is a table: the violating case and the passing one it is a variant of, then every variant generated
across API versions, object forms (patch, List, YAML components) and workload kinds, counted."""

from __future__ import annotations

import copy
import itertools

import pytest
from policy_helpers import check_resource, object_forms, pod_forms

from policy.nemotron_policies.rbac import GRANTS

RBAC_VERSIONS = ("rbac.authorization.k8s.io/v1", "rbac.authorization.k8s.io/v1beta1")


def role_rule(**rule: object) -> dict:
    return {"metadata": {"name": "r", "namespace": "ns"}, "rules": [rule]}


def reported(resource_type: str, props: object) -> list[str]:
    return check_resource("least-privilege", resource_type, props)


SECRET_READS = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["watch"]},
    {"apiGroups": ["*"], "resources": ["secrets"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["*"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["*"]},
]
NODE_PROXY = [
    {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["*"]},
    {"apiGroups": ["*"], "resources": ["*/proxy"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["*"], "verbs": ["create"]},
]
HARMLESS_RULES = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["gateway-master-key"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["delete", "deletecollection"]},
    {"apiGroups": ["apps"], "resources": ["secrets"], "verbs": ["get"]},  # no such resource in apps
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["nodes/metrics", "nodes/stats"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["list"]},
]


@pytest.mark.parametrize("rule", SECRET_READS + NODE_PROXY, ids=repr)
def test_rules_reading_every_secret_or_reaching_the_kubelet_are_reported(rule):
    messages = reported("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", role_rule(**rule))
    assert any("reads every Secret" in m or "kubelet API" in m for m in messages), messages


@pytest.mark.parametrize("rule", HARMLESS_RULES, ids=repr)
def test_named_secrets_deletions_and_read_only_node_data_pass(rule):
    assert reported("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", role_rule(**rule)) == []


@pytest.mark.parametrize("grant", [g for g in GRANTS if g.scope == "privileged"], ids=lambda g: g.id)
def test_pod_creation_and_secret_writes_count_where_pods_may_run_privileged(grant):
    """A ClusterRole can be bound in any namespace, and a Role in a namespace Pod Security does not restrict may
    start privileged pods or mint a service account's token (a Secret it creates): both are reported, each path
    once. The same Role in a namespace listed in `restrictedNamespaces` passes."""
    rule = role_rule(apiGroups=[grant.group], resources=[grant.resources[0]], verbs=sorted(grant.verbs)[:1])
    restricted = {"restrictedNamespaces": ["ns"]}
    for kind, config, paths in (
        ("ClusterRole", None, [grant.why]),
        ("Role", None, [grant.why]),
        ("ClusterRole", restricted, [grant.why]),
        ("Role", restricted, []),
    ):
        messages = check_resource("least-privilege", f"kubernetes:rbac.authorization.k8s.io/v1:{kind}", rule, config)
        assert [m.partition(": it ")[2] for m in messages] == paths, (kind, config)


def test_every_form_of_an_escalating_role_is_reported():
    forms = [
        form
        for kind in ("ClusterRole", "Role")
        for rule in SECRET_READS + NODE_PROXY
        for form in object_forms(RBAC_VERSIONS, kind, role_rule(**rule))
    ]
    missed = [label for label, token, props in forms if not reported(token, props)]
    assert (len(forms), missed) == (2 * 11 * 12, [])


EVERYONE = [
    {"kind": "Group", "name": "system:unauthenticated", "apiGroup": "rbac.authorization.k8s.io"},
    {"kind": "User", "name": "system:anonymous", "apiGroup": "rbac.authorization.k8s.io"},
    {"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"},
    {"kind": "Group", "name": "system:serviceaccounts", "apiGroup": "rbac.authorization.k8s.io"},
]


def binding(role: str, *subjects: dict) -> dict:
    return {
        "metadata": {"name": "b", "namespace": "ns"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": list(subjects),
    }


def test_bindings_to_everyone_are_reported_in_every_form():
    owner = {"kind": "ServiceAccount", "name": "gateway", "namespace": "ns"}
    forms = [
        form
        for kind, subject in itertools.product(("ClusterRoleBinding", "RoleBinding"), EVERYONE)
        for form in object_forms(RBAC_VERSIONS, kind, binding("view", owner, subject))
    ]
    missed = [label for label, token, props in forms if not any("binds view to" in m for m in reported(token, props))]
    assert (len(forms), missed) == (2 * 4 * 12, [])


def test_bindings_to_named_subjects_and_the_discovery_roles_pass():
    token = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
    assert reported(token, binding("view", {"kind": "ServiceAccount", "name": "gateway", "namespace": "ns"})) == []
    assert reported(token, binding("view", {"kind": "Group", "name": "nemotron-operators"})) == []
    assert reported(token, binding("system:public-info-viewer", *EVERYONE)) == []


def pod(**changes: object) -> dict:
    spec: dict = {
        "containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"}],
        "initContainers": [{"name": "init", "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"}],
    }
    for path, value in changes.items():
        node = spec
        keys = path.split("__")
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        node[keys[-1]] = value
    return spec


POD_VIOLATIONS = {
    "pod SELinux spc_t": (pod(securityContext={"seLinuxOptions": {"type": "spc_t"}}), "spc_t"),
    "container SELinux spc_t": (pod(containers__0__securityContext={"seLinuxOptions": {"type": "spc_t"}}), "spc_t"),
    "init container SELinux unconfined_t": (
        pod(initContainers__0__securityContext={"seLinuxOptions": {"type": "unconfined_t"}}),
        "unconfined_t",
    ),
    "hostPort": (pod(containers__0__ports=[{"containerPort": 8000, "hostPort": 8000}]), "hostPort 8000"),
    "init container hostPort": (pod(initContainers__0__ports=[{"containerPort": 22, "hostPort": 22}]), "hostPort 22"),
}
POD_PASSES = {
    "SELinux container_t": pod(securityContext={"seLinuxOptions": {"type": "container_t", "level": "s0:c1,c2"}}),
    "SELinux container_kvm_t": pod(containers__0__securityContext={"seLinuxOptions": {"type": "container_kvm_t"}}),
    "containerPort only": pod(containers__0__ports=[{"containerPort": 8000}]),
    "hostPort 0": pod(containers__0__ports=[{"containerPort": 8000, "hostPort": 0}]),
}


@pytest.mark.parametrize("name", POD_VIOLATIONS)
def test_pod_fields_outside_the_baseline_are_reported_in_every_workload_form(name):
    spec, needle = POD_VIOLATIONS[name]
    forms = pod_forms(spec)
    missed = [label for label, token, props in forms if not any(needle in m for m in reported(token, props))]
    assert (len(forms), missed) == (9 * 6, [])


@pytest.mark.parametrize("name", POD_PASSES)
def test_confined_types_and_container_ports_pass(name):
    for label, token, props in pod_forms(POD_PASSES[name]):
        assert reported(token, props) == [], label


def persistent_volume(field: str, path: str) -> dict:
    return {
        "metadata": {"name": "pv"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], field: {"path": path}},
    }


@pytest.mark.parametrize("field", ["hostPath", "local"])
def test_persistent_volumes_on_node_paths_are_reported_in_every_form(field):
    forms = object_forms(("v1",), "PersistentVolume", persistent_volume(field, "/var/lib/kubelet"))
    missed = [
        label
        for label, token, props in forms
        if f"{field} volume (/var/lib/kubelet)" not in str(reported(token, props))
    ]
    assert (len(forms), missed) == (6, [])


@pytest.mark.parametrize("field", ["hostPath", "local"])
def test_persistent_volumes_on_allowed_paths_pass(field):
    props = persistent_volume(field, "/var/lib/nemotron-prewarm/state")
    assert reported("kubernetes:core/v1:PersistentVolume", copy.deepcopy(props)) == []
