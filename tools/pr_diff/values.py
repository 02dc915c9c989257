"""Field-level changes between two JSON values, as a reviewer reads them.

Lists of objects are matched by an identity key (`name`, `id`, ...) instead of position, so inserting an
env var shows one added entry, not every later entry changed. Strings holding a JSON object (IAM
policies, vLLM `--kv-transfer-config`, ConfigMap payloads) are parsed and compared field by field; IAM
policy documents go to `iam.diff_policy` (per statement). Values next to a secret are never kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from tools.pr_diff.changes import MISSING, SECRET, FieldChange
from tools.pr_diff.iam import diff_policy, is_policy_document

# Keys whose values are never shown, wherever they appear (kubeconfig holds cluster credentials).
ALWAYS_HIDDEN_KEYS = frozenset({"kubeconfig"})
# Keys that identify an item of a list of objects, in order of preference.
IDENTITY_KEYS = ("name", "id", "pool", "Sid", "deviceName", "mountPath", "containerPort", "key")
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def join_path(path: str, key: str) -> str:
    """`a.b`, or `a["nemotron.nvidia.com/pool"]` for keys that are not plain words."""
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def hidden_change(path: str) -> FieldChange:
    return FieldChange(path, None, None, hidden=True)


def diff_values(
    before: Any, after: Any, path: str = "", hidden_keys: frozenset[str] = frozenset(), hidden: bool = False
) -> list[FieldChange]:
    """Every changed leaf between `before` and `after` (either may be `MISSING`)."""
    if before == after:
        return []
    if hidden:
        return [hidden_change(path)]
    if isinstance(before, dict) and isinstance(after, dict):
        return _diff_objects(before, after, path, hidden_keys)
    if isinstance(before, list) and isinstance(after, list):
        return _diff_lists(before, after, path, hidden_keys)
    if SECRET in (before, after) or _holds_secret(before) or _holds_secret(after):
        return [hidden_change(path)]
    if isinstance(before, str) and isinstance(after, str):
        parsed = _json_objects(before, after)
        if parsed is not None:
            old, new = parsed
            if is_policy_document(old) or is_policy_document(new):
                return diff_policy(old, new, path)
            return diff_values(old, new, f"{path}(json)", hidden_keys)
    return [FieldChange(path, before, after)]


def _diff_objects(
    before: dict[str, Any], after: dict[str, Any], path: str, hidden_keys: frozenset[str]
) -> list[FieldChange]:
    # A secret's neighbours may be secret too (a username beside a password): hide the whole object.
    beside_secret = SECRET in before.values() or SECRET in after.values()
    changes: list[FieldChange] = []
    for key in sorted(set(before) | set(after)):
        hide = beside_secret or key in hidden_keys or key in ALWAYS_HIDDEN_KEYS
        changes += diff_values(
            before.get(key, MISSING), after.get(key, MISSING), join_path(path, key), hidden_keys, hide
        )
    return changes


def identity_key(*lists: list[Any]) -> str | None:
    """The key that names each object of every list uniquely, if there is one."""
    items = [item for values in lists for item in values]
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    for key in IDENTITY_KEYS:
        if all(_is_unique_key(values, key) for values in lists):
            return key
    return None


def _is_unique_key(values: list[dict[str, Any]], key: str) -> bool:
    names = [item.get(key) for item in values]
    return all(isinstance(name, (str, int)) for name in names) and len(set(names)) == len(names)


def _diff_lists(before: list[Any], after: list[Any], path: str, hidden_keys: frozenset[str]) -> list[FieldChange]:
    key = identity_key(before, after)
    if key is not None:
        old = {str(item[key]): item for item in before}
        new = {str(item[key]): item for item in after}
        changes: list[FieldChange] = []
        for name in _ordered_union(old, new):
            changes += diff_values(old.get(name, MISSING), new.get(name, MISSING), f"{path}[{name}]", hidden_keys)
        return changes
    if _all_scalars(before) and _all_scalars(after):
        if _holds_secret(before) or _holds_secret(after):
            return [hidden_change(path)]
        return [FieldChange(path, before, after)]
    if len(before) == len(after):
        changes = []
        for index, (old_item, new_item) in enumerate(zip(before, after, strict=False)):
            changes += diff_values(old_item, new_item, f"{path}[{index}]", hidden_keys)
        return changes
    if _holds_secret(before) or _holds_secret(after):
        return [hidden_change(path)]
    return [FieldChange(path, before, after)]


def _ordered_union(old: dict[str, Any], new: dict[str, Any]) -> Iterable[str]:
    """Names in the new order, then the removed ones: a diff that reads like the new manifest."""
    yield from new
    yield from (name for name in old if name not in new)


def _all_scalars(values: list[Any]) -> bool:
    return all(not isinstance(value, (dict, list)) for value in values)


def _holds_secret(value: Any) -> bool:
    if value == SECRET:
        return True
    if isinstance(value, dict):
        return any(_holds_secret(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_secret(item) for item in value)
    return False


def _json_objects(before: str, after: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Both strings parsed, when both hold a JSON object."""
    parsed = []
    for text in (before, after):
        if not text.lstrip().startswith("{"):
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        if not isinstance(value, dict):
            return None
        parsed.append(value)
    return parsed[0], parsed[1]
