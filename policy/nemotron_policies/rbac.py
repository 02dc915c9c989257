"""The rights Kubernetes RBAC objects and EKS access entries give (the RBAC half of the `least-privilege` rule).

No binding to `cluster-admin` (or `admin`/`edit` cluster-wide), no rule granting every verb on every
resource, no `escalate` / `bind` / `impersonate`, no ClusterRole aggregating the built-in admin roles' rules
(or every role's), and no access entry putting its principal in `system:masters`. The escalation paths of
the Kubernetes docs "Role Based Access Control Good Practices" (kubernetes.io/docs/concepts/security/
rbac-good-practices/, "Kubernetes RBAC - privilege escalation risks"): reading every Secret (`get`, `list` or
`watch` on `secrets` without `resourceNames`: service-account tokens included), the kubelet API through
`nodes/proxy` (`get` or `create`: exec into any pod on the node, unaudited), and bindings to the groups every
caller is in (`system:unauthenticated`, `system:anonymous`, `system:authenticated`, every service account).
Rules are matched as the API server's RBAC authorizer matches them (`rbac/v1/evaluation_helpers.go`): an API
group is `*` or itself, a resource `*`, itself, or `*/<subresource>`, a verb `*` or itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .kinds import kubernetes_objects
from .values import UNKNOWN, as_dict, as_list, dig, text

ADMIN_ROLES = frozenset({"cluster-admin"})
CLUSTER_WIDE_ADMIN_ROLES = frozenset({"admin", "edit"})
ESCALATING_VERBS = frozenset({"escalate", "bind", "impersonate"})
# Every verb of a resource, spelled out: the same as `*` for what a rule grants.
EVERY_VERB = frozenset({"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"})
# Labels that select the built-in admin roles' rules (aggregated into admin/edit) or the default roles
# themselves (cluster-admin carries `kubernetes.io/bootstrapping: rbac-defaults`).
ADMIN_AGGREGATION_LABELS = frozenset(
    {
        "rbac.authorization.k8s.io/aggregate-to-admin",
        "rbac.authorization.k8s.io/aggregate-to-edit",
        "rbac.authorization.k8s.io/aggregate-to-cluster-admin",
        "kubernetes.io/bootstrapping",
    }
)
SYSTEM_MASTERS = "system:masters"
# (apiGroup, resource, subresource, verbs): what reads every Secret or reaches the kubelet API of every node.
ESCALATION_GRANTS = (
    ("", "secrets", "", frozenset({"get", "list", "watch"}), "reads every Secret (service-account tokens included)"),
    ("", "nodes", "proxy", frozenset({"get", "create"}), "reaches the kubelet API (exec in any pod on the node)"),
)
# Subjects every caller (or every pod) is: a binding to them grants its role to anyone.
EVERYONE_SUBJECTS = {
    ("Group", "system:unauthenticated"): "every unauthenticated caller",
    ("User", "system:anonymous"): "every anonymous caller",
    ("Group", "system:authenticated"): "every authenticated caller (any AWS principal the cluster maps)",
    ("Group", "system:serviceaccounts"): "every service account of the cluster",
}
# The discovery roles Kubernetes itself binds to those groups (bootstrap policy, `kubectl get
# clusterrolebindings system:public-info-viewer system:discovery system:basic-user`).
DISCOVERY_ROLES = frozenset({"system:public-info-viewer", "system:discovery", "system:basic-user"})
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"


def rbac_privileges(resource_type: str, props: Any) -> Iterator[str]:
    for obj in kubernetes_objects(resource_type, props):
        if obj.group != "rbac.authorization.k8s.io":
            continue
        where = f"{obj.kind} {obj.name or '?'}"
        if obj.kind in ("ClusterRoleBinding", "RoleBinding"):
            role = dig(obj.body, "roleRef", "name")
            if role in ADMIN_ROLES or (obj.kind == "ClusterRoleBinding" and role in CLUSTER_WIDE_ADMIN_ROLES):
                yield f"{where} grants {role}; bind a role with the rules the subjects need"
            yield from _everyone_problems(obj.body, role, where)
        if obj.kind == "ClusterRole":
            yield from _aggregation_problems(dig(obj.body, "aggregationRule"), where)
        if obj.kind in ("ClusterRole", "Role"):
            for index, rule in enumerate(as_list(dig(obj.body, "rules"))):
                verbs = {str(v).lower() for v in as_list(dig(rule, "verbs"))}
                blanket = ("*" in verbs or verbs >= EVERY_VERB) and "*" in as_list(dig(rule, "resources"))
                if blanket:
                    yield f"{where} rules[{index}] grants every verb on every resource"
                for verb in sorted(verbs & ESCALATING_VERBS):
                    yield f"{where} rules[{index}] grants {verb}"
                if not blanket:
                    yield from _escalation_grants(rule, verbs, f"{where} rules[{index}]")


def _matches(listed: list[Any], wanted: str) -> bool:
    return any(str(v) in ("*", wanted) for v in listed if v is not UNKNOWN)


def _resource_matches(listed: list[Any], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    return any(
        str(v) in ("*", combined) or (subresource and str(v) == f"*/{subresource}") for v in listed if v is not UNKNOWN
    )


def _escalation_grants(rule: Any, verbs: set[str], where: str) -> Iterator[str]:
    if as_list(dig(rule, "resourceNames")) or dig(rule, "resourceNames") is UNKNOWN:
        return  # named objects only
    for group, resource, subresource, risky, why in ESCALATION_GRANTS:
        granted = sorted(verbs & risky) if "*" not in verbs else ["*"]
        if (
            granted
            and _matches(as_list(dig(rule, "apiGroups")), group)
            and _resource_matches(as_list(dig(rule, "resources")), resource, subresource)
        ):
            target = f"{resource}/{subresource}" if subresource else resource
            yield f"{where} grants {', '.join(granted)} on {target}: it {why}"


def _everyone_problems(binding: Any, role: Any, where: str) -> Iterator[str]:
    if role in DISCOVERY_ROLES:
        return
    for subject in as_list(dig(binding, "subjects")):
        kind, name = text(dig(subject, "kind")) or "", text(dig(subject, "name")) or ""
        if (kind, name) in EVERYONE_SUBJECTS:
            yield f"{where} binds {role or '?'} to {kind} {name}: {EVERYONE_SUBJECTS[kind, name]}"


def _aggregation_problems(rule: Any, where: str) -> Iterator[str]:
    """A ClusterRole whose aggregationRule collects the built-in admin roles' rules (or every role's)."""
    for index, selector in enumerate(as_list(dig(rule, "clusterRoleSelectors"))):
        if selector is UNKNOWN:
            continue
        labels = set(as_dict(dig(selector, "matchLabels")))
        labels |= {
            dig(e, "key") for e in as_list(dig(selector, "matchExpressions")) if dig(e, "operator") != "DoesNotExist"
        }
        picked = sorted(str(label) for label in labels & ADMIN_AGGREGATION_LABELS)
        if picked:
            yield f"{where} aggregationRule selector {index} selects {', '.join(picked)}: it collects admin rights"
        elif isinstance(selector, dict) and not dig(selector, "matchLabels") and not dig(selector, "matchExpressions"):
            yield f"{where} aggregationRule selector {index} is empty: it collects every ClusterRole's rules"


def access_entry_problems(resource_type: str, props: Any, cluster_admins: frozenset[str]) -> Iterator[str]:
    if resource_type != ACCESS_ENTRY or dig(props, "principalArn") in cluster_admins:
        return
    groups = {str(g).strip().lower() for g in as_list(dig(props, "kubernetesGroups")) if g is not UNKNOWN}
    if SYSTEM_MASTERS in groups:
        yield (
            f"access entry puts {text(dig(props, 'principalArn')) or 'its principal'} in {SYSTEM_MASTERS} "
            "(cluster-admin that no RBAC rule can take away); associate a scoped access policy instead"
        )
