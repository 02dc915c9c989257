"""Names across keys (serving_stack/plan/name_checks.py), with every limit read from
catalog/name_limits.yaml: generated names on both sides of each limit, reserved namespaces and namespaces
two components would both create. Each refusal names the key the user wrote."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serving_stack.config import parse_stack_config
from serving_stack.facts import load_facts
from serving_stack.facts.name_limits import load_name_limits
from serving_stack.plan.name_checks import check_names
from tools.stack_files import stack_config

LIMITS = load_name_limits()
FACTS = load_facts()
PROJECT = "nemotron-lightning"


def committed(stack: str) -> dict[str, Any]:
    config, _ = stack_config(stack)
    return {
        key.removeprefix(f"{PROJECT}:"): json.loads(value) if value[:1] in "[{" else value
        for key, value in config.items()
        if key.startswith(f"{PROJECT}:")
    }


PROD = committed("prod")


def errors_for(edit) -> list[str]:
    raw = copy.deepcopy(PROD)
    edit(raw)
    return [str(error) for error in check_names(parse_stack_config(raw), FACTS)]


def test_the_committed_stacks_pass():
    for stack in ("dev", "prod"):
        assert check_names(parse_stack_config(committed(stack)), FACTS) == []


LABEL = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=1).flatmap(
    lambda first: st.text("abcdefghijklmnopqrstuvwxyz0123456789-", max_size=61).map(
        lambda rest: (first + rest).rstrip("-") or first
    )
)


@settings(max_examples=200, deadline=None)
@given(LABEL)
def test_gateway_names_follow_the_service_limits(name):
    """The proxy's Service and Redis's (`<name>-redis`) are DNS-1035 labels of at most maxLength."""
    errors = errors_for(lambda raw: raw["gateway"].update(name=name))
    longest = len(f"{name}-redis")
    fits = longest <= LIMITS.serviceName.maxLength and name[0].isalpha()
    assert (errors == []) == fits, errors
    assert all(error.startswith("gateway.name: ") for error in errors)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=63))
def test_helm_release_names_at_most_the_helm_limit(length):
    name = "d" * length
    errors = errors_for(lambda raw: raw.setdefault("dynamo", {}).update(platform={"releaseName": name}))
    assert (errors == []) == (length <= LIMITS.helmReleaseName.maxLength), errors
    assert all(error.startswith("dynamo.platform.releaseName: ") for error in errors)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=63))
def test_pool_names_fit_the_node_group_and_role_names(length):
    name = "p" * length
    errors = errors_for(lambda raw: raw["aws"]["nodePools"][0].update(name=name))
    node_group = length + 1 + LIMITS.namePrefixSuffix.length
    role = len(f"pool-{name}-node-role") + LIMITS.autonameSuffix.length
    fits = node_group <= LIMITS.eksNodegroupName.maxLength and role <= LIMITS.iamRoleName.maxLength
    assert (errors == []) == fits, errors
    assert all(error.startswith("aws.nodePools[0].name: ") for error in errors)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=63))
def test_cluster_names_fit_the_system_node_group_name(length):
    name = "c" * length
    errors = errors_for(lambda raw: raw["aws"]["cluster"]["create"].update(name=name))
    fits = len(f"{name}-system-") + LIMITS.namePrefixSuffix.length <= LIMITS.eksNodegroupName.maxLength
    assert (errors == []) == fits, errors
    assert all(error.startswith("aws.cluster.create.name: ") for error in errors)


NAMESPACE_KEYS = {
    "kubernetes.namespace": lambda raw, ns: raw["kubernetes"].update(namespace=ns),
    "dynamo.platform.namespace": lambda raw, ns: raw.setdefault("dynamo", {}).update(platform={"namespace": ns}),
    "monitoring.namespace": lambda raw, ns: raw.setdefault("monitoring", {}).update(namespace=ns),
}
RESERVED = [*LIMITS.reservedNamespaces.names, f"{LIMITS.reservedNamespaces.reservedPrefix}custom"]


@pytest.mark.parametrize("key", list(NAMESPACE_KEYS))
@pytest.mark.parametrize("namespace", RESERVED)
def test_reserved_namespaces_are_refused(key, namespace):
    errors = errors_for(lambda raw: NAMESPACE_KEYS[key](raw, namespace))
    assert errors and errors[0].startswith(f"{key}: "), errors


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations(NAMESPACE_KEYS, 2)))
def test_two_components_on_one_namespace_are_refused(first, second):
    def edit(raw):
        NAMESPACE_KEYS[first](raw, "shared-ns")
        NAMESPACE_KEYS[second](raw, "shared-ns")

    errors = errors_for(edit)
    assert len(errors) == 1 and errors[0].split(":")[0] in (first, second), errors


def test_the_namespace_of_an_add_on_is_refused_for_the_serving_namespace():
    nvidia = FACTS.aws.platform.devicePlugins.nvidia.namespace
    errors = errors_for(lambda raw: raw["kubernetes"].update(namespace=nvidia))
    assert errors and errors[0].startswith("kubernetes.namespace: ") and "aws.devicePlugins.nvidia" in errors[0]


PATH_LIMIT = LIMITS.efsAccessPointPath


def efs_base(base: str):
    def edit(raw):
        raw["aws"]["modelCacheStorage"] = {"backend": "efs", "efs": {"basePath": base}}

    return edit


def test_efs_base_paths_within_the_access_point_limits_pass():
    deepest = "".join(f"/d{i}" for i in range(PATH_LIMIT.maxDepth - 1))
    longest = "/" + "a" * (PATH_LIMIT.maxLength - PATH_LIMIT.derivedSuffixLength - 1)
    for base in ("/", deepest, longest):
        assert errors_for(efs_base(base)) == [], base


@pytest.mark.parametrize(
    ("base", "why"),
    [
        ("".join(f"/d{i}" for i in range(PATH_LIMIT.maxDepth)), "directories"),
        ("/" + "a" * (PATH_LIMIT.maxLength - PATH_LIMIT.derivedSuffixLength), "characters"),
        ("/cache//models", "empty directory"),
        ("/cache/", "empty directory"),
    ],
)
def test_efs_base_paths_past_the_access_point_limits_are_refused(base, why):
    (error,) = errors_for(efs_base(base))
    assert error.startswith("aws.modelCacheStorage.efs.basePath: ") and why in error, error
