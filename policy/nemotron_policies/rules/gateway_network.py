"""gateway-network-policy: the gateway's pods (every workload the stack's Gateway component creates: the
LiteLLM proxy, its Redis) are isolated by a NetworkPolicy of the stack, in both directions, and no policy
selecting them admits every source.

The gateway holds the master key and SigV4 credentials and answers on the serving namespace's behalf; its
NetworkPolicies (`docs/gateway.md`) are what keep other namespaces out and its egress to the model services,
DNS and AWS. They are void when removed, when their `podSelector` no longer selects the pods, when their
`policyTypes` leave a direction out (`[Egress]` alone: ingress rules ignored and ingress open), or when any
other policy selecting the pods adds an ingress rule for every source (policies are additive). Read the way
`network_policies.py` describes; the gateway's workloads are found by the component type token in their URN,
and so is every other workload that reads a Secret of the Gateway component (the master key) through env
`secretKeyRef`, `envFrom` or a secret volume: a key-holding proxy outside the component is held to the same rule.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from ..kinds import ancestor_types, kubernetes_objects
from ..names import GATEWAY_COMPONENT
from ..network_policies import DIRECTIONS, admits_every_source, isolated_directions, network_policies, selects
from ..pods import POD_SPEC_PATHS, is_workload_kind
from ..values import UNKNOWN, as_list, dig, plain
from ..workloads import containers


def _pod_labels(obj: Any) -> Any:
    path = POD_SPEC_PATHS[obj.kind][1]
    return dig(obj.body, *path[:-1], "metadata", "labels")


def _gateway_secrets(resources: list[tuple[Any, Any]]) -> set[tuple[Any, Any]]:
    """(namespace, name) of the Secrets the Gateway component creates."""
    return {
        (obj.namespace or "default", obj.name)
        for resource, props in resources
        if GATEWAY_COMPONENT in ancestor_types(resource.urn)
        for obj in kubernetes_objects(resource.resource_type, props)
        if obj.group == "" and obj.kind == "Secret" and isinstance(obj.name, str)
    }


def _secret_names(spec: Any) -> set[Any]:
    """Names of the Secrets a pod spec reads (env `secretKeyRef`, `envFrom.secretRef`, secret volumes)."""
    names = {dig(v, "secret", "secretName") for v in as_list(dig(spec, "volumes"))}
    for container in containers(spec):
        names |= {dig(e, "valueFrom", "secretKeyRef", "name") for e in as_list(container.get("env"))}
        names |= {dig(e, "secretRef", "name") for e in as_list(container.get("envFrom"))}
    return names - {None}


def _holds_gateway_key(obj: Any, secrets: set[tuple[Any, Any]]) -> bool:
    namespace = obj.namespace or "default"
    spec = dig(obj.body, *POD_SPEC_PATHS[obj.kind][1])
    return any((namespace, name) in secrets for name in _secret_names(spec))


def validate_gateway_network_policy(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    resources = [(r, plain(r.props)) for r in args.resources]
    policies = [(r, obj) for r, p in resources for obj in network_policies(r.resource_type, p)]
    secrets = _gateway_secrets(resources)
    for resource, props in resources:
        in_gateway = GATEWAY_COMPONENT in ancestor_types(resource.urn)
        if not in_gateway and not secrets:
            continue
        for obj in kubernetes_objects(resource.resource_type, props):
            if not is_workload_kind(obj, *POD_SPEC_PATHS):
                continue
            if not in_gateway and not _holds_gateway_key(obj, secrets):
                continue
            labels, namespace = _pod_labels(obj), obj.namespace or "default"
            selecting = [
                (policy_resource, policy)
                for policy_resource, policy in policies
                if (policy.namespace or "default") in (namespace, UNKNOWN) or namespace is UNKNOWN
                if selects(dig(policy.body, "spec", "podSelector"), labels) is not False
            ]
            where = f"{obj.kind} {obj.name or resource.name}"
            isolated: set[str] = set()
            for _, policy in selecting:
                directions = isolated_directions(policy.body)
                isolated |= set(DIRECTIONS) if directions is UNKNOWN else directions
            missing = [d for d in DIRECTIONS if d not in isolated]
            if missing:
                why = (
                    "no NetworkPolicy of the stack selects its pods"
                    if not selecting
                    else f"the NetworkPolicies selecting its pods ({', '.join(p.name or '?' for _, p in selecting)}) "
                    f"leave {' and '.join(missing)} out of their policyTypes"
                )
                report_violation(
                    f"gateway {where}: {why}, so its {' and '.join(d.lower() for d in missing)} is open; keep the "
                    "gateway's NetworkPolicy selecting its pods with policyTypes [Ingress, Egress]",
                    resource.urn,
                )
            for policy_resource, policy in selecting:
                directions = isolated_directions(policy.body)
                if directions is not UNKNOWN and "Ingress" not in directions:
                    continue
                for index, rule in enumerate(as_list(dig(policy.body, "spec", "ingress"))):
                    if admits_every_source(rule) is True:
                        report_violation(
                            f"NetworkPolicy {policy.name or '?'} ingress rule {index} admits every source to the "
                            f"gateway's {where} (policies add up: this voids the gateway's allow-list); name "
                            "the namespaces that may call it",
                            policy_resource.urn,
                        )
