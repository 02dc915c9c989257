"""Names across keys: the namespaces the stack creates are its own (not a reserved one, not one taken by
another of its components), and the names it derives from a configured name fit the Kubernetes and AWS
limits of `catalog/name_limits.yaml`. Every error names the key the user wrote, never a derived name."""

from __future__ import annotations

import re
from typing import Optional

from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.name_limits import Limit, NameLimits, PathLimit, load_name_limits

CONFIGURED = ("kubernetes.namespace", "dynamo.platform.namespace", "monitoring.namespace")


def created_namespaces(config: StackConfig, facts: Facts) -> list[tuple[str, str, str]]:
    """Every Namespace object the stack creates: (name, the key that chose it or the switch that makes the
    stack create it, what it is for)."""
    created = [(config.kubernetes.namespace, "kubernetes.namespace", "the serving namespace")]
    platform, monitoring, scaling, aws = config.dynamo.platform, config.monitoring, config.autoscaling, config.aws
    if platform.install:
        created.append((platform.namespace, "dynamo.platform.namespace", "the Dynamo platform"))
    if monitoring.enabled and monitoring.creates_namespace:
        created.append((monitoring.namespace, "monitoring.namespace", "monitoring"))
    if scaling is not None and scaling.installKeda:
        created.append((facts.autoscaling.keda.namespace, "autoscaling.installKeda", "KEDA (catalog/autoscaling.yaml)"))
    pins = facts.aws.platform
    if aws is not None and aws.devicePlugins.nvidia:
        nvidia = pins.devicePlugins.nvidia.namespace
        created.append((nvidia, "aws.devicePlugins.nvidia", "the NVIDIA device plugin"))
    if aws is not None and aws.devicePlugins.draDriver:
        created.append((pins.draDriver.namespace, "aws.devicePlugins.draDriver", "the DRA driver"))
    return created


def check_namespaces(config: StackConfig, facts: Facts, limits: NameLimits) -> list[ConfigError]:
    errors = []
    seen: dict[str, tuple[str, str]] = {}
    reserved = limits.reservedNamespaces
    for name, key, what in created_namespaces(config, facts):
        if key in CONFIGURED and reserved.reserved(name):
            errors.append(
                ConfigError(
                    key,
                    f"{bounded(name)} is a namespace Kubernetes reserves; the stack creates and deletes its own ({what})",
                    f"a namespace of the stack's own, not {', '.join(reserved.names)} or kube-*",
                )
            )
        if name in seen:
            first_key, first_what = seen[name]
            named, other_key, other_what = (key, first_key, first_what) if key in CONFIGURED else (first_key, key, what)
            problem = f"{bounded(name)} is also the namespace of {other_what} ({other_key}): two Namespace objects of one name"
            errors.append(ConfigError(named, problem, "a namespace no other component of the stack creates"))
        seen.setdefault(name, (key, what))
    return errors


def _too_long(key: str, value: str, derived: str, limit: Limit, what: str) -> Optional[ConfigError]:
    if len(derived) <= limit.maxLength:
        return None
    return ConfigError(
        key,
        f"{bounded(value)} makes the {what} {bounded(derived)} of {len(derived)} characters; "
        f"at most {limit.maxLength} ({limit.source.split(':')[0]})",
        f"at most {limit.maxLength - (len(derived) - len(value))} characters",
    )


def check_derived_names(config: StackConfig, limits: NameLimits) -> list[ConfigError]:
    found: list[Optional[ConfigError]] = []
    gateway, service = config.gateway, limits.serviceName
    for derived in (gateway.name, f"{gateway.name}-redis") if gateway.enabled else ():  # the proxy's and Redis's
        problem = _too_long("gateway.name", gateway.name, derived, service, "Service")
        if problem is None and not re.fullmatch(service.pattern, derived):
            problem = ConfigError(
                "gateway.name",
                f"{bounded(gateway.name)} names a Service, which starts with a letter (DNS-1035 label)",
                "lower-case letters, digits and '-', starting with a letter",
            )
        if problem is not None:
            found.append(problem)
            break
    release = config.dynamo.platform.releaseName
    if config.dynamo.platform.install:
        found.append(
            _too_long("dynamo.platform.releaseName", release, release, limits.helmReleaseName, "Helm release name")
        )
    aws = config.aws
    if aws is None:
        return [error for error in found if error]
    if aws.modelCacheStorage is not None and aws.modelCacheStorage.backend == "efs":
        found.append(_check_access_point_base(aws.modelCacheStorage.efs.basePath, limits.efsAccessPointPath))
    group, suffix = limits.eksNodegroupName, "x" * limits.namePrefixSuffix.length
    if aws.cluster is not None and aws.cluster.create is not None:
        cluster = aws.cluster.create.name  # components.cluster: node_group_name_prefix
        derived = f"{cluster}-system-{suffix}"
        found.append(_too_long("aws.cluster.create.name", cluster, derived, group, "system node group name"))
    for index, pool in enumerate(aws.nodePools):
        if not pool.managed:
            continue
        key = f"aws.nodePools[{index}].name"
        problem = _too_long(key, pool.name, f"{pool.name}-{suffix}", group, "node group name")
        if problem is None:  # __main__.py and components.gpu_node_pool: the node role's auto-name
            derived = f"pool-{pool.name}-node-role-" + "x" * (limits.autonameSuffix.length - 1)
            problem = _too_long(key, pool.name, derived, limits.iamRoleName, "IAM role name")
        found.append(problem)
    return [error for error in found if error]


def _check_access_point_base(base: str, limit: PathLimit) -> Optional[ConfigError]:
    """The access point's path is `base` plus one directory of `derivedSuffixLength` characters."""
    key = "aws.modelCacheStorage.efs.basePath"
    directories = [part for part in base.split("/") if part]
    if base != "/" and (base.endswith("/") or "//" in base):
        return ConfigError(key, f"{bounded(base)} has an empty directory", "/dir or /dir/subdir, no trailing '/'")
    if len(directories) + 1 > limit.maxDepth:
        return ConfigError(
            key,
            f"{bounded(base)} has {len(directories)} directories and the driver adds one per claim; an EFS access "
            f"point path has at most {limit.maxDepth} (EFS API Reference, CreateAccessPoint)",
            f"at most {limit.maxDepth - 1} directories",
        )
    derived = base.rstrip("/") + "/" + "x" * (limit.derivedSuffixLength - 1)
    return _too_long(key, base, derived, limit, "EFS access point path")


def check_names(config: StackConfig, facts: Facts) -> list[ConfigError]:
    limits = load_name_limits()
    return check_namespaces(config, facts, limits) + check_derived_names(config, limits)
