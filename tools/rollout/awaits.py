"""How long `pulumi up` waits for each resource, and for what: the provider's await rule applied to the
resource's recorded options (customTimeouts) and annotations (skipAwait, timeoutSeconds, waitFor)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools.rollout.graph import HELM_RELEASE, Resource
from tools.rollout.rules import Rules

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}


def go_duration_seconds(text: str) -> float:
    """`"1h30m"`, `"70m"`, `"300s"` (customTimeouts strings) in seconds."""
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


@dataclass(frozen=True)
class Await:
    """What `up` waits for after creating a resource, and for how long (None: it does not wait)."""

    resource: Resource
    timeout_seconds: float | None
    ready_when: str
    timeout_basis: str
    source: str  # a key of provider_rules.yaml `sources`

    @property
    def awaited(self) -> bool:
        return self.timeout_seconds is not None


def _true(value: object) -> bool:
    return str(value).lower() == "true"


def kubernetes_await(resource: Resource, rules: Rules) -> Await:
    annotations = resource.annotations
    names = rules.annotations
    kind_rule = rules.kinds.get(resource.kind)
    source = kind_rule.source if kind_rule else "k8s-overrides"
    if _true(annotations.get(names["skip_await"])):
        return Await(resource, None, f'{names["skip_await"]}: "true"', "", source)
    wait_for = annotations.get(names["wait_for"])
    if not wait_for and (kind_rule is None or kind_rule.immediate):
        ready = kind_rule.ready_when if kind_rule else rules.custom_resource_ready_when
        return Await(resource, None, ready, "", source)
    configured, basis = None, ""
    if create := resource.custom_timeouts.get("create"):
        configured, basis = go_duration_seconds(create), f"customTimeouts.create {create}"
    elif (seconds := annotations.get(names["timeout_seconds"])) and str(seconds).isdigit():
        configured, basis = float(seconds), f"{names['timeout_seconds']}: {seconds}"
    overall = configured if configured is not None else rules.default_timeout_seconds
    if wait_for:
        ready = f"{names['wait_for']}: {wait_for}"
        timeout = overall
        basis = basis or f"default {rules.default_timeout_seconds:.0f} s"
    else:
        assert kind_rule is not None
        ready = kind_rule.ready_when
        if kind_rule.timeout_fixed:
            timeout = min(kind_rule.timeout_seconds, overall)
            basis = f"hard-coded {kind_rule.timeout_seconds:.0f} s (customTimeouts cannot extend it)"
        else:
            timeout = configured if configured is not None else kind_rule.timeout_seconds
            basis = basis or f"default {kind_rule.timeout_seconds:.0f} s"
    return Await(resource, timeout, ready, basis, source)


def helm_await(resource: Resource, rules: Rules) -> Await:
    helm = rules.helm
    source = str(helm["source"])
    if _true(resource.inputs.get("skipAwait")):
        return Await(resource, None, "not awaited (skipAwait)", "", source)
    if "timeout" in resource.inputs:
        timeout, basis = float(resource.inputs["timeout"]), f"timeout: {resource.inputs['timeout']}"
    else:
        timeout, basis = float(helm["default_timeout_seconds"]), f"default {helm['default_timeout_seconds']} s"
    return Await(resource, timeout, helm["ready_when"], basis, source)


def await_of(resource: Resource, rules: Rules) -> Await | None:
    """The wait for a Kubernetes object or Helm release; None for everything else (their provider's
    create call returns when the cloud resource is ready, which the durations model covers)."""
    if resource.type == HELM_RELEASE:
        return helm_await(resource, rules)
    if resource.is_kubernetes_object:
        return kubernetes_await(resource, rules)
    return None
