"""Reading resource properties that may be unknown, missing or of an unexpected shape.

The engine hands a validator proxies (`pulumi_policy.proxy`) that raise `UnknownValueError` when a value
that is only known after the update is read; unit tests hand plain dicts that may hold the same sentinel
strings, `pulumi.Output`s or None. `plain()` turns any of these into plain dicts and lists in which every
unknown value is the `UNKNOWN` marker, so a rule can skip exactly the check it cannot decide and still
run all the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Optional

import pulumi
from pulumi.output import Unknown as _SdkUnknown
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    _DictProxy,
    _ListProxy,
)

_SENTINELS = frozenset(
    {
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_OBJECT_VALUE,
        UNKNOWN_STRING_VALUE,
    }
)


class _Unknown:
    """A value that is only known after the update (preview) or that a test left undetermined."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


def is_unknown(value: Any) -> bool:
    if value is UNKNOWN or isinstance(value, (pulumi.Output, _SdkUnknown)):
        return True  # _SdkUnknown: what the SDK deserializes an unknown input into at preview
    return isinstance(value, str) and value in _SENTINELS


_SCALARS = frozenset({int, float, bool, type(None)})
# id(proxied value) -> (that value, its plain copy), while `shared_plain_copies` is active.
_SHARED: ContextVar[Optional[dict[int, tuple[Any, Any]]]] = ContextVar("nemotron_policies_shared_plain", default=None)


@contextmanager
def shared_plain_copies() -> Iterator[dict[int, tuple[Any, Any]]]:
    """Within the block, `plain()` of an engine proxy returns one copy per proxied value, shared by every
    policy that reads it (the offline run hands every policy the same proxies; rules only read what `plain()`
    returns, which `tests/test_policy_all_targets.py` checks on every catalog target). Yields the shared copies."""
    copies: dict[int, tuple[Any, Any]] = {}
    token = _SHARED.set(copies)
    try:
        yield copies
    finally:
        _SHARED.reset(token)


def plain(value: Any) -> Any:
    """A plain copy of `value` with every unknown replaced by `UNKNOWN`. Built-in dicts, lists and scalars
    (what the offline render and tests hand over; reading them cannot raise) take the direct path; inside
    `shared_plain_copies` an engine proxy's copy is made once."""
    kind = type(value)
    if kind is str:
        return UNKNOWN if value in _SENTINELS else value
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {key: plain(item) for key, item in value.items()}
    if kind is list:
        return [plain(item) for item in value]
    if kind is _DictProxy or kind is _ListProxy:
        # The engine's proxies (pinned pulumi-policy) hand out what they wrap under "__target"; its unknowns are
        # the sentinel strings, which the direct path turns into UNKNOWN as reading them through the proxy would.
        target = value["__target"]
        shared = _SHARED.get()
        if shared is None:
            return plain(target)
        entry = shared.get(id(target))
        if entry is None:
            entry = shared[id(target)] = (target, plain(target))  # keeps target alive, so its id stays its own
        return entry[1]
    if is_unknown(value):
        return UNKNOWN
    if isinstance(value, Mapping):
        copied = {}
        for key in list(value):
            try:
                copied[key] = plain(value[key])
            except UnknownValueError:
                copied[key] = UNKNOWN
        return copied
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        copied_items = []
        for index in range(len(value)):
            try:
                copied_items.append(plain(value[index]))
            except UnknownValueError:
                copied_items.append(UNKNOWN)
        return copied_items
    return value


def dig(value: Any, *path: Any) -> Any:
    """`value[p0][p1]...`: `UNKNOWN` as soon as a step is unknown, None when a step is missing or the
    shape does not fit (a list where a mapping was expected, say)."""
    for step in path:
        if value is UNKNOWN:
            return UNKNOWN
        if isinstance(step, int) and isinstance(value, list):
            value = value[step] if -len(value) <= step < len(value) else None
        elif isinstance(value, dict):
            try:
                value = value.get(step)
            except TypeError:  # an unhashable step (a list where a key was expected)
                return None
        else:
            return None
    return value


def as_list(value: Any) -> list[Any]:
    """The elements of a list; an unknown, missing or non-list value has none."""
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def text(value: Any) -> Optional[str]:
    """A known, non-empty string, else None."""
    return value if isinstance(value, str) and value and not is_unknown(value) else None


def count(value: Any) -> Any:
    """An integer resource quantity (`"4"`, `4`, `4.0`): the number, `UNKNOWN`, or None if absent or not a
    whole number (extended resources such as GPUs and EFA interfaces only come in whole units)."""
    if value is UNKNOWN:
        return UNKNOWN
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def parse_json(value: Any) -> Any:
    """A JSON document given as a string (or already parsed): the parsed value, `UNKNOWN`, or None if it
    does not parse."""
    if value is UNKNOWN or isinstance(value, (dict, list)):
        return value
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None
