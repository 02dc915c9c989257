"""Every use of the Pulumi SDK's private internals, in one place, so an SDK upgrade breaks here loudly
(`tests/test_pulumi_private.py`): the program lists its whole config namespace (the public `pulumi.Config`
cannot list keys, which the unknown-key check needs); the offline render runs it under the mock runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
from pulumi.runtime import config as _runtime_config
from pulumi.runtime import mocks as _mocks
from pulumi.runtime import rpc as _rpc
from pulumi.runtime import settings as _settings
from pulumi.runtime.stack import run_in_stack as _run_in_stack
from pulumi.runtime.sync_await import _sync_await

# How a secret value is marked in deserialized inputs (`pulumi.runtime.rpc._special_sig_key` / `_secret_sig`).
SECRET_SIGNATURE_KEY: str = _rpc._special_sig_key
SECRET_SIGNATURE: str = _rpc._special_secret_sig
MockMonitor = _mocks.MockMonitor
Mocks = _mocks.Mocks
MockResourceArgs = _mocks.MockResourceArgs
MockCallArgs = _mocks.MockCallArgs


def config_values() -> dict[str, Any]:
    """Every `project:key` -> value the engine handed to the running program."""
    return {**_runtime_config.get_config_env(), **_runtime_config.CONFIG.get()}


def is_secret_config(full_key: str) -> bool:
    return bool(_runtime_config.is_config_secret(full_key))


def deserialize_inputs(struct: Any) -> dict[str, Any]:
    """A RegisterResource request's `object` as plain Python values (secrets keep their marker)."""
    return dict(_rpc.deserialize_properties(struct, keep_unknowns=True))


def resolve(value: Any, secret_placeholder: Any) -> Any:
    """The value of an Output (or plain input) outside the program, a secret as `secret_placeholder`."""

    async def value_of() -> Any:
        output = pulumi.Output.from_input(value)
        return secret_placeholder if await output.is_secret() else await output.future()

    return _sync_await(value_of())


def run_with_mocks(
    program: Callable[[], Any],
    mocks: Any,
    monitor: Any,
    *,
    project: str,
    stack: str,
    config: dict[str, Any],
    secret_keys: list[str],
) -> dict[str, Any]:
    """Run `program` as a Pulumi program under mocks (preview=False); returns the stack's outputs. It runs
    in a new root Stack as the language host runs a program (`run_in_stack`), so an entry point registered
    with `pulumi.run` runs too."""
    _settings.set_root_resource(None)  # type: ignore[arg-type]  # the SDK resets the stack this way itself
    pulumi.runtime.set_all_config(config, secret_keys)
    _mocks.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
    _settings.set_root_resource(None)  # type: ignore[arg-type]  # set_mocks made a closed one
    roots: list[Any] = []  # the Stack run_in_stack makes is the root inside the run only (a context variable)

    def in_stack() -> Any:
        roots.append(_settings.get_root_resource())
        return program()

    _sync_await(_run_in_stack(in_stack))
    return dict(roots[0].outputs)
