"""Field-level changes between two JSON values as a reviewer reads them, from DeepDiff's tree view.

Lists of objects pair by an identity key (`name`, `id`, ...), so inserting an env var shows one added entry;
a list of scalars (or of unpaired objects) changes as a whole. Strings holding a JSON object (IAM policies,
vLLM `--kv-transfer-config`, ConfigMap payloads) are compared field by field; IAM policy documents go to
`iam.diff_policy` (per statement). Values beside a secret are never kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

from deepdiff import DeepDiff
from deepdiff.helper import CannotCompare, NotPresent

from tools.pr_diff.changes import MISSING, SECRET, FieldChange
from tools.pr_diff.iam import diff_policy, is_policy_document

ALWAYS_HIDDEN_KEYS = frozenset({"kubeconfig"})  # never shown, wherever they appear (cluster credentials)
IDENTITY_KEYS = ("name", "id", "pool", "Sid", "deviceName", "mountPath", "containerPort", "key")
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def identity_key(*lists: Any) -> str | None:
    """The key that names each object of every list uniquely, if there is one."""
    if not all(isinstance(values, list) for values in lists):
        return None
    items = [item for values in lists for item in values]
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    for key in IDENTITY_KEYS:
        names = [[item.get(key) for item in values] for values in lists]
        if all(all(isinstance(n, (str, int)) for n in ns) and len(set(ns)) == len(ns) for ns in names):
            return key
    return None


def _same_identity(x: Any, y: Any, level: Any = None) -> bool:
    key = identity_key(level.t1, level.t2) if level is not None else None
    if key is None:
        raise CannotCompare
    return bool(x[key] == y[key])


def _holds_secret(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_secret(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_secret(item) for item in value)
    return bool(value == SECRET)


def _json_object(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _side(value: Any) -> Any:
    return MISSING if isinstance(value, NotPresent) else value


def _leaf(path: str, before: Any, after: Any, hidden_keys: frozenset[str]) -> list[FieldChange]:
    if before == after:
        return []
    if _holds_secret(before) or _holds_secret(after):
        return [FieldChange(path, None, None, hidden=True)]
    old, new = _json_object(before), _json_object(after)
    if old is not None and new is not None:
        if is_policy_document(old) or is_policy_document(new):
            return diff_policy(old, new, path)
        return diff_values(old, new, f"{path}(json)", hidden_keys)
    return [FieldChange(path, before, after)]


def _join(path: str, key: str) -> str:
    """`a.b`, or `a["nemotron.nvidia.com/pool"]` for keys that are not plain words."""
    if not _PLAIN_KEY.match(key):
        return f"{path}[{json.dumps(key)}]"
    return f"{path}.{key}" if path else key


Located = tuple[str, tuple[Any, ...], Any, Any, bool]


def _locate(level: Any, path: str, hidden_keys: frozenset[str]) -> list[Located]:
    """(path, sort key, before, after, hidden) of a changed level; a change inside a list compared as a whole
    or beside a secret rises to that list or key, a renamed item of a named list is one removed, one added."""
    chain = []
    while level.up is not None:
        chain.append(level)
        level = level.up
    order: list[tuple[Any, str]] = []
    for child in reversed(chain):
        old, new = child.up.t1, child.up.t2
        param = (child.up.t1_child_rel or child.up.t2_child_rel).param
        before, after = _side(child.t1), _side(child.t2)
        if isinstance(old, dict):
            path = _join(path, param)
            order.append((0, param))
            if param in hidden_keys or param in ALWAYS_HIDDEN_KEYS or SECRET in [*old.values(), *new.values()]:
                return [(path, tuple(order), before, after, True)]
            continue
        key = identity_key(old, new)
        if key is None and (len(old) != len(new) or all(not isinstance(v, (dict, list)) for v in [*old, *new])):
            return [(path, tuple(order), old, new, False)]
        if key is None:
            path = f"{path}[{param}]"
            order.append((param, ""))
            continue
        names = [str(item[key]) for item in [*new, *old]]
        sides = [(before, MISSING), (MISSING, after)]
        if MISSING in (before, after) or before[key] == after[key]:
            sides = [(before, after)]
        located = []
        for old_item, new_item in sides:
            name = str((new_item if new_item is not MISSING else old_item)[key])
            place = (*order, (names.index(name), ""))
            located.append((f"{path}[{name}]", place, old_item, new_item, False))
        if len(sides) == 2 or child is chain[0]:
            return located
        path, order = located[0][0], list(located[0][1])
    return [(path, tuple(order), before, after, False)]


def diff_values(
    before: Any, after: Any, path: str = "", hidden_keys: frozenset[str] = frozenset()
) -> list[FieldChange]:
    """Every changed field between `before` and `after` (either may be `MISSING`), in the new manifest's order."""
    if not (isinstance(before, (dict, list)) and type(before) is type(after)):
        return _leaf(path, before, after, hidden_keys)
    found: dict[str, tuple[tuple[Any, ...], list[FieldChange]]] = {}
    tree = DeepDiff(before, after, view="tree", iterable_compare_func=_same_identity, threshold_to_diff_deeper=0)
    for change, levels in tree.items():
        for level in levels if change != "iterable_item_moved" else ():
            for where, order, old, new, hidden in _locate(level, path, hidden_keys):
                if where in found:
                    continue
                hide = [FieldChange(where, None, None, hidden=True)]
                found[where] = (order, hide if hidden else _leaf(where, old, new, hidden_keys))
    return [c for _, changes in sorted(found.values(), key=lambda item: item[0]) for c in changes]
