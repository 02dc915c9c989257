"""Names across keys: the namespaces the stack creates are its own (not a reserved one, not one taken by
another of its components), and the names it derives from a configured name fit the Kubernetes and AWS
limits of `catalog/name_limits.yaml`. Every error names the key the user wrote, never a derived name."""

from __future__ import annotations

import re
from dataclasses import dataclass

from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.name_limits import NameLimits, PathLimit, load_name_limits


@dataclass(frozen=True)
class CreatedNamespace:
    name: str
    key: str  # the config key that chose it, or the switch that makes the stack create it
    what: str


def created_namespaces(config: StackConfig, facts: Facts) -> list[CreatedNamespace]:
    """Every Namespace object the stack creates, with the key that decides it."""
    created = [CreatedNamespace(config.kubernetes.namespace, "kubernetes.namespace", "the serving namespace")]
    platform = config.dynamo.platform
    if platform.install:
        created.append(CreatedNamespace(platform.namespace, "dynamo.platform.namespace", "the Dynamo platform"))
    monitoring = config.monitoring
    creates_monitoring = (
        monitoring.prometheus.install if monitoring.createNamespace is None else monitoring.createNamespace
    )
    if monitoring.enabled and creates_monitoring:
        created.append(CreatedNamespace(monitoring.namespace, "monitoring.namespace", "monitoring"))
    if config.autoscaling is not None and config.autoscaling.installKeda:
        keda = facts.autoscaling.keda.namespace
        created.append(CreatedNamespace(keda, "autoscaling.installKeda", "KEDA (catalog/autoscaling.yaml)"))
    if config.aws is not None:
        pins = facts.aws.platform
        if config.aws.devicePlugins.nvidia:
            nvidia = pins.devicePlugins.nvidia.namespace
            created.append(CreatedNamespace(nvidia, "aws.devicePlugins.nvidia", "the NVIDIA device plugin"))
        if config.aws.devicePlugins.draDriver:
            created.append(CreatedNamespace(pins.draDriver.namespace, "aws.devicePlugins.draDriver", "the DRA driver"))
    return created


def check_namespaces(config: StackConfig, facts: Facts, limits: NameLimits) -> list[ConfigError]:
    errors = []
    configured = {"kubernetes.namespace", "dynamo.platform.namespace", "monitoring.namespace"}
    seen: dict[str, CreatedNamespace] = {}
    for namespace in created_namespaces(config, facts):
        if namespace.key in configured and limits.reservedNamespaces.reserved(namespace.name):
            errors.append(
                ConfigError(
                    namespace.key,
                    f"{bounded(namespace.name)} is a namespace Kubernetes reserves; the stack creates and deletes "
                    f"its own ({namespace.what})",
                    f"a namespace of the stack's own, not {', '.join(limits.reservedNamespaces.names)} or kube-*",
                )
            )
        first = seen.get(namespace.name)
        if first is not None:
            key = namespace.key if namespace.key in configured else first.key
            errors.append(
                ConfigError(
                    key,
                    f"{bounded(namespace.name)} is also the namespace of {first.what if key == namespace.key else namespace.what}"
                    f" ({first.key if key == namespace.key else namespace.key}): two Namespace objects of one name",
                    "a namespace no other component of the stack creates",
                )
            )
        seen.setdefault(namespace.name, namespace)
    return errors


def _too_long(key: str, value: str, derived: str, limit: int, what: str, source: str) -> ConfigError:
    room = limit - (len(derived) - len(value))
    return ConfigError(
        key,
        f"{bounded(value)} makes the {what} {bounded(derived)} of {len(derived)} characters; "
        f"at most {limit} ({source.split(':')[0]})",
        f"at most {room} characters",
    )


def check_derived_names(config: StackConfig, limits: NameLimits) -> list[ConfigError]:
    errors = []
    gateway = config.gateway
    if gateway.enabled:
        service = limits.serviceName
        for derived in (gateway.name, f"{gateway.name}-redis"):  # the proxy's Service and Redis's
            if len(derived) > service.maxLength:
                errors.append(
                    _too_long("gateway.name", gateway.name, derived, service.maxLength, "Service", service.source)
                )
                break
            if not re.fullmatch(service.pattern, derived):
                errors.append(
                    ConfigError(
                        "gateway.name",
                        f"{bounded(gateway.name)} names a Service, which starts with a letter (DNS-1035 label)",
                        "lower-case letters, digits and '-', starting with a letter",
                    )
                )
                break
    platform = config.dynamo.platform
    if platform.install and len(platform.releaseName) > limits.helmReleaseName.maxLength:
        helm = limits.helmReleaseName
        errors.append(
            _too_long(
                "dynamo.platform.releaseName",
                platform.releaseName,
                platform.releaseName,
                helm.maxLength,
                "Helm release name",
                helm.source,
            )
        )
    aws = config.aws
    if aws is None:
        return errors
    storage = aws.modelCacheStorage
    if storage is not None and storage.backend == "efs":
        errors += _check_access_point_base(storage.efs.basePath, limits.efsAccessPointPath)
    nodegroup, suffix = limits.eksNodegroupName, limits.namePrefixSuffix.length
    role, autoname = limits.iamRoleName, limits.autonameSuffix.length
    if aws.cluster is not None and aws.cluster.create is not None:
        cluster = aws.cluster.create.name
        derived = f"{cluster}-system-" + "x" * suffix  # eks_cluster.py: node_group_name_prefix
        if len(derived) > nodegroup.maxLength:
            errors.append(
                _too_long(
                    "aws.cluster.create.name",
                    cluster,
                    derived,
                    nodegroup.maxLength,
                    "system node group name",
                    nodegroup.source,
                )
            )
    for index, pool in enumerate(aws.nodePools):
        if not pool.managed:
            continue
        key = f"aws.nodePools[{index}].name"
        derived = f"{pool.name}-" + "x" * suffix  # gpu_node_pool.py: node_group_name_prefix
        if len(derived) > nodegroup.maxLength:
            errors.append(_too_long(key, pool.name, derived, nodegroup.maxLength, "node group name", nodegroup.source))
            continue
        derived = f"pool-{pool.name}-node-role-" + "x" * (autoname - 1)  # __main__.py and gpu_node_pool.py
        if len(derived) > role.maxLength:
            errors.append(_too_long(key, pool.name, derived, role.maxLength, "IAM role name", role.source))
    return errors


def _check_access_point_base(base: str, limit: PathLimit) -> list[ConfigError]:
    """The access point's path is `base` plus one directory of `derivedSuffixLength` characters."""
    key = "aws.modelCacheStorage.efs.basePath"
    directories = [part for part in base.split("/") if part]
    if base != "/" and (base.endswith("/") or "//" in base):
        return [ConfigError(key, f"{bounded(base)} has an empty directory", "/dir or /dir/subdir, no trailing '/'")]
    if len(directories) + 1 > limit.maxDepth:
        return [
            ConfigError(
                key,
                f"{bounded(base)} has {len(directories)} directories and the driver adds one per claim; an EFS access "
                f"point path has at most {limit.maxDepth} (EFS API Reference, CreateAccessPoint)",
                f"at most {limit.maxDepth - 1} directories",
            )
        ]
    derived = base.rstrip("/") + "/" + "x" * (limit.derivedSuffixLength - 1)
    if len(derived) > limit.maxLength:
        return [_too_long(key, base, derived, limit.maxLength, "EFS access point path", limit.source)]
    return []


def check_names(config: StackConfig, facts: Facts) -> list[ConfigError]:
    limits = load_name_limits()
    return check_namespaces(config, facts, limits) + check_derived_names(config, limits)
