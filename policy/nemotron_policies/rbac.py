"""The rights Kubernetes RBAC objects and EKS access entries give (the RBAC half of the `least-privilege` rule).

The escalation paths are data (`data/rbac_escalation.yaml`, each with its sources: the Kubernetes docs "RBAC
Good Practices", rbac-police's and KubiScan's rule sets): pod and pod-controller creation where a pod may run
privileged (a ClusterRole, or a Role in a namespace not in `restrictedNamespaces`), exec and ephemeral
containers, service-account token requests, reading or writing Secrets, PersistentVolume creation,
`nodes/proxy`, admission webhooks, CSR approval, the aws-auth ConfigMap. Also reported: `*` in a rule's
apiGroups, resources or verbs; `escalate` / `bind` / `impersonate`; bindings (RoleBinding or
ClusterRoleBinding) to a built-in role that creates pods or reads Secrets (`cluster-admin`, `admin`, `edit`,
the control plane's `system:` roles) or to a subject every caller is (`system:authenticated`,
`system:anonymous`...) or `system:masters`; a ClusterRole whose `aggregationRule` selector matches the labels
of a built-in admin role (evaluated as a label selector: `DoesNotExist`/`NotIn` on a label those roles lack
match them); an access entry or an aws-auth ConfigMap putting a principal in `system:masters`.
Rules are matched as the API server's RBAC authorizer matches them (`rbac/v1/evaluation_helpers.go`): an API
group is `*` or itself, a resource `*`, itself, or `*/<subresource>`, a verb `*` or itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import yaml

from .kinds import KubeObject, kubernetes_objects
from .network_policies import selects
from .values import UNKNOWN, as_list, dig, text

DATA = yaml.safe_load((Path(__file__).resolve().parent / "data" / "rbac_escalation.yaml").read_text())
GROUP = "rbac.authorization.k8s.io"
ESCALATING_VERBS = frozenset({"escalate", "bind", "impersonate"})
# Every verb of a resource, spelled out: the same as `*` for what a rule grants.
EVERY_VERB = frozenset({"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"})
BROAD_ROLES = frozenset(DATA["broad_roles"])
BROAD_ROLE_PREFIXES = tuple(DATA["broad_role_prefixes"])
BUILTIN_ROLE_LABELS: dict[str, dict[str, str]] = DATA["builtin_role_labels"]
EVERYONE_SUBJECTS = {(s["kind"], s["name"]): s["who"] for s in DATA["everyone_subjects"]}
# The discovery roles Kubernetes itself binds to those groups (bootstrap policy, `kubectl get
# clusterrolebindings system:public-info-viewer system:discovery system:basic-user`).
DISCOVERY_ROLES = frozenset({"system:public-info-viewer", "system:discovery", "system:basic-user"})
SYSTEM_MASTERS = "system:masters"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
KUBE_SYSTEM = "kube-system"
AWS_AUTH = "aws-auth"


@dataclass(frozen=True)
class Grant:
    """One escalation path of the data: what makes it, where it counts, and whether resourceNames narrows it."""

    id: str
    group: str
    resources: tuple[str, ...]
    verbs: frozenset[str]
    scope: str  # everywhere | privileged | kube-system
    names_limit: Union[bool, str]  # True: any resourceNames narrow it; a name: only names without it do
    why: str


GRANTS = [
    Grant(g["id"], g["group"], tuple(g["resources"]), frozenset(g["verbs"]), g["scope"], g["names_limit"], g["why"])
    for g in DATA["grants"]
]


def rbac_privileges(resource_type: str, props: Any, restricted_namespaces: frozenset[str]) -> Iterator[str]:
    for obj in kubernetes_objects(resource_type, props):
        if obj.group != GROUP:
            continue
        where = f"{obj.kind} {f'{obj.namespace}/' if isinstance(obj.namespace, str) else ''}{obj.name or '?'}"
        if obj.kind in ("ClusterRoleBinding", "RoleBinding"):
            yield from _binding_problems(obj.body, where)
        if obj.kind == "ClusterRole":
            yield from _aggregation_problems(dig(obj.body, "aggregationRule"), where)
        if obj.kind in ("ClusterRole", "Role"):
            scopes = _scopes(obj, restricted_namespaces)
            for index, rule in enumerate(as_list(dig(obj.body, "rules"))):
                yield from _rule_problems(rule, scopes, f"{where} rules[{index}]")


def _scopes(obj: KubeObject, restricted: frozenset[str]) -> set[str]:
    """Where a role's rules count: `everywhere` always; `privileged` and `kube-system` for a ClusterRole (it can
    be bound in any namespace) or a Role in such a namespace (one not in `restrictedNamespaces`)."""
    if obj.kind == "ClusterRole":
        return {"everywhere", "privileged", KUBE_SYSTEM}
    namespace = obj.namespace if obj.namespace is not None else "default"
    scopes = {"everywhere"}
    if namespace is UNKNOWN:
        return scopes | ({"privileged"} if not restricted else set())
    if namespace not in restricted:
        scopes.add("privileged")
    if namespace == KUBE_SYSTEM:
        scopes.add(KUBE_SYSTEM)
    return scopes


def _strings(rule: Any, field: str) -> list[str]:
    return [str(v) for v in as_list(dig(rule, field)) if v is not UNKNOWN]


def _resource_matches(listed: list[str], wanted: str) -> bool:
    _, _, subresource = wanted.partition("/")
    return any(v in ("*", wanted) or (subresource and v == f"*/{subresource}") for v in listed)


def _rule_problems(rule: Any, scopes: set[str], where: str) -> Iterator[str]:
    groups, resources = _strings(rule, "apiGroups"), _strings(rule, "resources")
    verbs = {v.lower() for v in _strings(rule, "verbs")}
    if ("*" in verbs or verbs >= EVERY_VERB) and "*" in resources:
        yield f"{where} grants every verb on every resource"
        return
    for field, listed in (("apiGroups", groups), ("resources", resources), ("verbs", sorted(verbs))):
        if "*" in listed:
            yield f'{where} has "*" in {field}: it grants what exists now and whatever is added later; list them'
    for verb in sorted(verbs & ESCALATING_VERBS):
        yield f"{where} grants {verb}"
    names = dig(rule, "resourceNames")
    if names is UNKNOWN:
        return
    named = [str(n) for n in as_list(names)]
    for grant in GRANTS:
        if grant.scope not in scopes or not any(g in ("*", grant.group) for g in groups):
            continue
        if named and (
            grant.names_limit is True or (isinstance(grant.names_limit, str) and grant.names_limit not in named)
        ):
            continue
        granted = ["*"] if "*" in verbs else sorted(verbs & grant.verbs)
        targets = [r for r in grant.resources if _resource_matches(resources, r)]
        if granted and targets:
            yield f"{where} grants {', '.join(granted)} on {', '.join(targets)}: it {grant.why}"


def _broad_role(role: Any) -> bool:
    return isinstance(role, str) and (role in BROAD_ROLES or role.startswith(BROAD_ROLE_PREFIXES))


def _binding_problems(binding: Any, where: str) -> Iterator[str]:
    role = dig(binding, "roleRef", "name")
    if dig(binding, "roleRef", "kind") != "Role" and _broad_role(role):
        yield f"{where} grants {role}; bind a role with the rules the subjects need"
    if role in DISCOVERY_ROLES:
        return
    for index, subject in enumerate(as_list(dig(binding, "subjects"))):
        kind, name = text(dig(subject, "kind")) or "", text(dig(subject, "name")) or ""
        if (kind, name) in EVERYONE_SUBJECTS:
            yield f"{where} subjects[{index}] binds {role or '?'} to {kind} {name}: {EVERYONE_SUBJECTS[kind, name]}"


def _aggregation_problems(rule: Any, where: str) -> Iterator[str]:
    """A ClusterRole whose aggregationRule selects a built-in admin role (its selector matches that role's labels)."""
    for index, selector in enumerate(as_list(dig(rule, "clusterRoleSelectors"))):
        if selector is UNKNOWN or not isinstance(selector, dict):
            continue
        picked = [role for role, labels in BUILTIN_ROLE_LABELS.items() if selects(selector, labels) is True]
        if picked:
            yield (
                f"{where} aggregationRule.clusterRoleSelectors[{index}] selects the built-in {', '.join(picked)}: "
                "it collects admin rights; select only labels your own roles carry"
            )


def aws_auth_problems(resource_type: str, props: Any, cluster_admins: frozenset[str]) -> Iterator[str]:
    """The aws-auth ConfigMap (EKS's older access map) putting an IAM principal in system:masters."""
    for obj in kubernetes_objects(resource_type, props):
        if (
            obj.group == ""
            and obj.kind == "ConfigMap"
            and obj.name == AWS_AUTH
            and obj.namespace in (KUBE_SYSTEM, UNKNOWN)
        ):
            yield from _aws_auth_entries(obj, cluster_admins)


def _aws_auth_entries(obj: KubeObject, cluster_admins: frozenset[str]) -> Iterator[str]:
    for key in ("mapRoles", "mapUsers"):
        document = dig(obj.body, "data", key)
        try:
            entries = yaml.safe_load(document) if isinstance(document, str) else None
        except yaml.YAMLError:
            continue
        for index, entry in enumerate(as_list(entries)):
            principal = text(dig(entry, "rolearn")) or text(dig(entry, "userarn")) or "?"
            groups = {str(g).strip().lower() for g in as_list(dig(entry, "groups"))}
            if SYSTEM_MASTERS in groups and principal not in cluster_admins:
                yield (
                    f"ConfigMap kube-system/aws-auth data.{key}[{index}] puts {principal} in {SYSTEM_MASTERS} "
                    "(cluster-admin that no RBAC rule can take away); use an EKS access entry with a scoped policy"
                )


def access_entry_problems(resource_type: str, props: Any, cluster_admins: frozenset[str]) -> Iterator[str]:
    if resource_type != ACCESS_ENTRY or dig(props, "principalArn") in cluster_admins:
        return
    groups = {str(g).strip().lower() for g in as_list(dig(props, "kubernetesGroups")) if g is not UNKNOWN}
    if SYSTEM_MASTERS in groups:
        yield (
            f"access entry kubernetesGroups puts {text(dig(props, 'principalArn')) or 'its principal'} in "
            f"{SYSTEM_MASTERS} (cluster-admin that no RBAC rule can take away); associate a scoped access policy instead"
        )
