"""pod-security-standards: every pod the stack declares meets the Pod Security Standard its namespace
enforces, checked offline the way the PodSecurity admission controller checks it on the API server.

- The level of a namespace is its `pod-security.kubernetes.io/enforce` label when the stack creates the
  Namespace (a value that is not a level counts as `restricted`, as the admission controller fails closed);
  a namespace the stack does not create, or does not label, gets `defaultLevel` (pack config, default
  `baseline`: the standard the Kubernetes docs recommend as the floor) unless a component states the level of
  the cluster's namespace it uses (its input `existingNamespace: {name, enforce}`, from the stack's config:
  the admin's label, declared where the PR diff shows it). Namespaces in `exemptNamespaces`
  (default `kube-system`) are not checked, as the admission configuration's exemptions.
- `privileged` (no checks) is accepted only on namespaces created or stated by the components of
  `privilegedNamespaceComponents` (default: the stack's ServingNamespace, whose RDMA workers need IPC_LOCK
  and whose prewarm mounts a node path); elsewhere a Namespace labelled `privileged` is reported.
- The controls are the table of `pod_security.py`; pods are every pod template the stack declares
  (`pods.pod_specs`: built-in workloads, Dynamo resources, pod-shaped custom resources; with
  `pods.loose_container_pods`, the single containers and pod-level settings of workflow resources).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import PolicyConfigSchema, ReportViolation, StackValidationArgs

from ..config import settings
from ..kinds import ancestor_types, kubernetes_objects, kubernetes_type
from ..names import SERVING_NAMESPACE_COMPONENT
from ..pod_security import LEVELS, Pod, pod_security_violations
from ..pods import loose_container_pods, pod_specs
from ..values import UNKNOWN, as_dict, as_list, dig, plain

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
EXISTING_NAMESPACE = "existingNamespace"  # a component's input: {name, enforce} of a cluster namespace it uses
SCHEMA = PolicyConfigSchema(
    {
        "defaultLevel": {
            "type": "string",
            "enum": list(LEVELS),
            "default": "baseline",
            "description": "Level for namespaces the stack does not create or label.",
        },
        "exemptNamespaces": {
            "type": "array",
            "items": {"type": "string"},
            "default": ["kube-system"],
            "description": "Namespaces whose pods are not checked (the admission configuration's exemptions).",
        },
        "privilegedNamespaceComponents": {
            "type": "array",
            "items": {"type": "string"},
            "default": [SERVING_NAMESPACE_COMPONENT],
            "description": "Type tokens of components whose Namespaces may enforce the privileged level.",
        },
    }
)


def validate_pod_security_standards(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    config = settings(args, SCHEMA)
    default_level = str(config["defaultLevel"])
    exempt = {str(n) for n in as_list(config["exemptNamespaces"])}
    privileged_components = {str(c) for c in as_list(config["privilegedNamespaceComponents"])}
    resources = [(r, plain(r.props)) for r in args.resources]
    levels: dict[Any, str] = {}
    for resource, props in resources:
        for obj in kubernetes_objects(resource.resource_type, props):
            if obj.group != "" or obj.kind != "Namespace" or not isinstance(obj.name, str):
                continue
            label = as_dict(dig(obj.body, "metadata", "labels")).get(ENFORCE_LABEL)
            if label is UNKNOWN:
                levels[obj.name] = "privileged"  # judged once known
                continue
            if label is None:
                continue
            level = label if label in LEVELS else "restricted"
            levels[obj.name] = level
            if level == "privileged" and not privileged_components.intersection(ancestor_types(resource.urn)):
                report_violation(
                    f"Namespace {obj.name} enforces the privileged Pod Security level (no checks at all); only the "
                    "namespaces of privilegedNamespaceComponents may: enforce baseline or restricted",
                    resource.urn,
                )
    for resource, props in resources:
        stated = as_dict(props).get(EXISTING_NAMESPACE) if kubernetes_type(resource.resource_type) is None else None
        name, label = dig(stated, "name"), dig(stated, "enforce")
        if not isinstance(name, str) or name in levels or label is None:
            continue
        levels[name] = "privileged" if label is UNKNOWN else label if label in LEVELS else "restricted"
        owners = {resource.resource_type, *ancestor_types(resource.urn)}
        if levels[name] == "privileged" and label is not UNKNOWN and not privileged_components & owners:
            report_violation(
                f"{resource.resource_type} states that namespace {name} enforces the privileged Pod Security level; "
                "only the components of privilegedNamespaceComponents may",
                resource.urn,
            )
    for resource, props in resources:
        for pod in pod_specs(resource.resource_type, props) + loose_container_pods(resource.resource_type, props):
            namespace = pod.namespace if pod.namespace is not None else "default"
            if namespace is UNKNOWN or namespace in exempt:
                continue
            level = levels.get(namespace, default_level)
            findings = [
                f"{control.name}: {finding}" for control, finding in pod_security_violations(Pod(pod.spec), level)
            ]
            if findings:
                report_violation(
                    f"{pod.owner} in namespace {namespace} breaks the {level} Pod Security Standard: "
                    + "; ".join(dict.fromkeys(findings)),
                    resource.urn,
                )
