"""How Kubernetes reads a NetworkPolicy (kubernetes.io/docs/concepts/services-networking/network-policies/ and
the `networking.k8s.io/v1` API reference): which pods it selects, which directions it isolates, and which
ingress rules admit every source.

- `spec.podSelector` selects pods of the policy's own namespace by label (`matchLabels`, `matchExpressions`
  with In / NotIn / Exists / DoesNotExist); `{}` selects every pod there.
- `policyTypes`, when given, is what the policy isolates: rules of a direction it does not list are
  ignored. When it is not given, the policy isolates Ingress, and Egress too when it has an `egress` section.
- Policies are additive: one rule admitting a source admits it whatever other policies say. An ingress rule
  admits every source when it has no `from` peers, or a peer `namespaceSelector: {}` (every pod of every
  namespace) without a narrowing `podSelector`, or an `ipBlock` holding the Internet (with `except` ranges
  that leave most of it), or a peer naming nothing (`{}`: the API server refuses it; a tool that fills it in
  would admit everyone).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .kinds import KubeObject, kubernetes_objects
from .network_exposure import public_share_outside, world_range
from .values import UNKNOWN, as_dict, as_list, dig

GROUPS = frozenset({"networking.k8s.io", "extensions"})
KIND = "NetworkPolicy"
DIRECTIONS = ("Ingress", "Egress")


def network_policies(resource_type: str, props: Any) -> Iterator[KubeObject]:
    for obj in kubernetes_objects(resource_type, props):
        if obj.group in GROUPS and obj.kind == KIND:
            yield obj


def isolated_directions(body: Any) -> Any:
    """The directions a policy isolates (`UNKNOWN` if its policyTypes are unknown)."""
    types = dig(body, "spec", "policyTypes")
    if types is UNKNOWN or UNKNOWN in as_list(types):
        return UNKNOWN
    if types is not None:
        return {str(t) for t in as_list(types)}
    return {"Ingress"} | ({"Egress"} if dig(body, "spec", "egress") is not None else set())


def selects(selector: Any, labels: Any) -> Any:
    """Does a label selector select pods with `labels`? `UNKNOWN` when either is unknown."""
    if selector is UNKNOWN or labels is UNKNOWN:
        return UNKNOWN
    labels = as_dict(labels)
    for key, value in as_dict(dig(selector, "matchLabels")).items():
        if value is UNKNOWN:
            return UNKNOWN
        if labels.get(key) != value:
            return False
    for expression in as_list(dig(selector, "matchExpressions")):
        key, operator, values = dig(expression, "key"), dig(expression, "operator"), as_list(dig(expression, "values"))
        if UNKNOWN in (key, operator) or UNKNOWN in values:
            return UNKNOWN
        present = key in labels
        if (
            (operator == "In" and not (present and labels[key] in values))
            or (operator == "NotIn" and present and labels[key] in values)
            or (operator == "Exists" and not present)
            or (operator == "DoesNotExist" and present)
        ):
            return False
    return True


PEER_KEYS = ("namespaceSelector", "podSelector", "ipBlock")
# An ipBlock of the whole Internet whose `except` ranges leave more than half of the public addresses still
# admits everyone for every practical purpose (excepting the private ranges, or one address, narrows nothing).
MOST_OF_THE_INTERNET = 0.5


def everyone_peer(peer: Any) -> Any:
    """Why one peer admits everyone (`namespaceSelector: {}` without a narrowing `podSelector`, an `ipBlock` holding
    the Internet, a peer naming nothing), None if it does not, `UNKNOWN` when that cannot be told."""
    if peer is UNKNOWN:
        return UNKNOWN
    if isinstance(peer, dict) and not any(peer.get(k) is not None for k in PEER_KEYS):
        return "names no namespace, pod or address"
    namespaces, pods = dig(peer, "namespaceSelector"), dig(peer, "podSelector")
    if UNKNOWN in (namespaces, pods):
        return UNKNOWN
    if isinstance(namespaces, dict) and not namespaces and not pods:
        return "namespaceSelector {} selects every pod of every namespace"
    cidr, excepts = dig(peer, "ipBlock", "cidr"), as_list(dig(peer, "ipBlock", "except"))
    if not isinstance(cidr, str) or world_range(cidr) is not True:
        return None
    if not excepts:
        return f"ipBlock {cidr} holds every address"
    share = public_share_outside(cidr, excepts)
    if share is UNKNOWN:
        return UNKNOWN
    if share is not None and share > MOST_OF_THE_INTERNET:
        return f"ipBlock {cidr} except {', '.join(map(str, excepts))} still holds {share:.0%} of the public addresses"
    return None


def admits_every_source(rule: Any) -> Any:
    """Does one ingress rule admit every source (on its ports)? `UNKNOWN` when its peers are unknown."""
    peers = dig(rule, "from")
    if peers is UNKNOWN or UNKNOWN in as_list(peers):
        return UNKNOWN
    if not as_list(peers):
        return True
    return any(isinstance(everyone_peer(peer), str) for peer in as_list(peers))
