"""Run the pack on a recorded render, the way `pulumi preview --policy-pack policy` runs it.

`evaluate` takes the `RecordedResource`s of `tools.mock_runtime.run_program` and runs the pack's own
policy objects: each `ResourceValidationPolicy` once per resource with a `ResourceValidationArgs`, each
`StackValidationPolicy` once with a `StackValidationArgs` over all resources. Properties reach a policy as
they reach it from the engine: secrets unwrapped, unknown values as the engine's sentinels behind the
unknown-checking proxy. Enforcement levels and properties come from a pack config shaped like the CLI's
`--policy-pack-config` file, checked and resolved by `pack_config`.

Options the analyzer protocol does not carry are still set on `PolicyResourceOptions`: `retain_on_delete`
(from `RecordedResource.retain_on_delete`), read by `data-protection`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from inspect import isawaitable
from typing import Any, Optional, Union

import pulumi
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN as SDK_UNKNOWN
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from .config import offline_stack
from .pack import PACK_NAME, PACK_VERSION, POLICIES
from .pack_config import resolve_config
from .values import shared_plain_copies

_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


@dataclass(frozen=True)
class Violation:
    policy_name: str
    enforcement_level: str  # "mandatory" or "advisory"
    description: str
    message: str
    urn: str = ""  # "" when the whole stack is in violation

    @property
    def mandatory(self) -> bool:
        return self.enforcement_level == EnforcementLevel.MANDATORY.value

    @property
    def resource(self) -> str:
        """`type::name` of the resource, as the engine's summary shows it."""
        if not self.urn:
            return "pulumi:pulumi:Stack"
        qualified_type, name = self.urn.split("::")[2:4]
        return f"{qualified_type.split('$')[-1]}::{name}"


def _as_engine_sends(value: Any) -> Any:
    """Inputs as the analyzer deserializes them: secrets unwrapped, unknowns as the string sentinel."""
    if isinstance(value, (pulumi.Output, Unknown)) or (isinstance(value, str) and value == SDK_UNKNOWN):
        return UNKNOWN_STRING_VALUE
    if isinstance(value, Mapping):
        if value.get(_SIG_KEY) == _SECRET_SIG:
            return _as_engine_sends(value.get("value"))
        return {key: _as_engine_sends(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_engine_sends(item) for item in value]
    return value


def policy_resources(resources: Sequence[Any]) -> list[PolicyResource]:
    """`PolicyResource`s of recorded resources, with parents, dependencies and providers linked by URN."""
    urns: dict[str, str] = {}
    for recorded in resources:
        urns.setdefault(f"{recorded.type}::{recorded.name}", recorded.urn)
    built: dict[str, PolicyResource] = {}
    for recorded in resources:
        options = PolicyResourceOptions(
            protect=bool(recorded.protect),
            ignore_changes=[],
            delete_before_replace=None,
            aliases=[],
            custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
            additional_secret_outputs=[],
            parent=urns.get(recorded.parent) or None,
        )
        options.retain_on_delete = bool(recorded.retain_on_delete)  # type: ignore[attr-defined]
        built[recorded.urn] = PolicyResource(
            recorded.type,
            unknown_checking_proxy(_as_engine_sends(recorded.inputs)),
            recorded.urn,
            recorded.name,
            options,
            None,
            None,
            [],
            {},
        )
    for recorded in resources:
        resource = built[recorded.urn]
        resource.parent = built.get(urns.get(recorded.parent, ""))
        resource.dependencies = [built[urns[d]] for d in recorded.depends_on if urns.get(d, "") in built]
        provider = built.get(urns.get(recorded.provider, ""))
        if provider is not None:
            resource.provider = PolicyProviderResource(
                provider.resource_type, provider.props, provider.urn, provider.name
            )
    return list(built.values())


def _run(policy: Union[ResourceValidationPolicy, StackValidationPolicy], args: Any, report: Any) -> Optional[str]:
    """Run one validation; the engine's preview diagnostic when it reads an unknown value, else None."""
    try:
        result = policy.validate(args, report)
        if isawaitable(result):
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(result)
            finally:
                loop.close()
    except UnknownValueError as error:
        return (
            f"can't run policy '{policy.name}' from policy pack '{PACK_NAME}@v{PACK_VERSION}' during preview: "
            f"{error.message}"
        )
    except _NotApplicableError:
        pass
    return None


def evaluate(
    resources: Sequence[Any],
    pack_config: Optional[Mapping[str, Any]] = None,
    *,
    stack: Optional[str] = None,
    policies: Sequence[Policy] = POLICIES,
) -> list[Violation]:
    """Violations of `policies` (the pack's by default) by recorded resources, sorted as the engine prints
    them. `stack` is the stack being judged (default: the one the Pulumi runtime is configured for)."""
    config = resolve_config(policies, pack_config)
    targets = policy_resources(resources)
    violations: list[Violation] = []
    with offline_stack(stack or pulumi.get_stack()), shared_plain_copies():
        for policy in policies:
            level, properties = config[policy.name]
            if level == EnforcementLevel.DISABLED:
                continue
            level = EnforcementLevel.MANDATORY if level == EnforcementLevel.REMEDIATE else level

            def report(
                message: str, urn: Optional[str] = None, policy: Policy = policy, level: EnforcementLevel = level
            ) -> None:
                violations.append(Violation(policy.name, level.value, policy.description, message or "", urn or ""))

            if isinstance(policy, ResourceValidationPolicy):
                for target in targets:
                    args = ResourceValidationArgs(
                        target.resource_type,
                        target.props,
                        target.urn,
                        target.name,
                        target.opts,
                        target.provider,
                        dict(properties),
                    )
                    diagnostic = _run(policy, args, lambda message, urn=None, _urn=target.urn: report(message, _urn))
                    if diagnostic:
                        violations.append(Violation(policy.name, "advisory", policy.description, diagnostic))
            elif isinstance(policy, StackValidationPolicy):
                diagnostic = _run(policy, StackValidationArgs(targets, dict(properties)), report)
                if diagnostic:
                    violations.append(Violation(policy.name, "advisory", policy.description, diagnostic))
    return sorted(violations, key=lambda v: (v.enforcement_level, v.policy_name, v.urn))


def format_report(violations: Sequence[Violation]) -> str:
    """The violations as the CLI prints its "Policy Violations:" section, with each resource's URN."""
    if not violations:
        return "Policy Violations: none\n"
    lines = ["Policy Violations:"]
    for violation in sorted(violations, key=lambda v: (v.enforcement_level, v.policy_name, v.urn)):
        lines.append(
            f"    [{violation.enforcement_level}]  {PACK_NAME} v{PACK_VERSION}  {violation.policy_name} "
            f"({violation.resource})"
        )
        if violation.urn:
            lines.append(f"    {violation.urn}")
        for line in f"{violation.description}\n{violation.message}".rstrip("\n").split("\n"):
            lines.append(f"    {line}")
    mandatory = sum(v.mandatory for v in violations)
    lines.append(f"{mandatory} mandatory, {len(violations) - mandatory} advisory policy violation(s)")
    return "\n".join(lines) + "\n"
