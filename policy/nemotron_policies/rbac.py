"""The rights Kubernetes RBAC objects and EKS access entries give (the RBAC half of the `least-privilege` rule).

No binding to `cluster-admin` (or `admin`/`edit` cluster-wide), no rule granting every verb on every
resource, no `escalate` / `bind` / `impersonate`, no ClusterRole aggregating the built-in admin roles' rules
(or every role's), and no access entry putting its principal in `system:masters`.
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
        if obj.kind == "ClusterRole":
            yield from _aggregation_problems(dig(obj.body, "aggregationRule"), where)
        if obj.kind in ("ClusterRole", "Role"):
            for index, rule in enumerate(as_list(dig(obj.body, "rules"))):
                verbs = {str(v).lower() for v in as_list(dig(rule, "verbs"))}
                if ("*" in verbs or verbs >= EVERY_VERB) and "*" in as_list(dig(rule, "resources")):
                    yield f"{where} rules[{index}] grants every verb on every resource"
                for verb in sorted(verbs & ESCALATING_VERBS):
                    yield f"{where} rules[{index}] grants {verb}"


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
