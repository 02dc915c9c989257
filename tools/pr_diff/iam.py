"""IAM policy documents compared statement by statement, with widening called out.

A policy arrives as a JSON string (`policy`, `assumeRolePolicy`). Comparing the strings says only
"changed"; a reviewer needs which statement grants what more or less. Statements pair by `Sid`, then
unlabelled ones by equal actions, then in order. An Allow statement widens when it grants an action or
resource no old pattern covered, or drops a condition; a Deny statement widens access when it narrows.
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any

from tools.pr_diff.changes import MISSING, FieldChange

LIST_FIELDS = ("Action", "NotAction", "Resource", "NotResource")
OTHER_FIELDS = ("Effect", "Principal", "NotPrincipal", "Condition")


def is_policy_document(value: Any) -> bool:
    return isinstance(value, dict) and "Statement" in value


def _statements(document: Any) -> list[dict[str, Any]]:
    if not is_policy_document(document):
        return []
    statements = document["Statement"]
    return [s for s in (statements if isinstance(statements, list) else [statements]) if isinstance(s, dict)]


def _items(statement: dict[str, Any], field: str) -> list[str]:
    value = statement.get(field, [])
    return sorted(str(item) for item in (value if isinstance(value, list) else [value]))


def _covered(item: str, patterns: list[str], case_sensitive: bool) -> bool:
    """Whether an old pattern already grants `item` (itself possibly a pattern): `s3:*` covers `s3:Get*`."""
    if not case_sensitive:
        item, patterns = item.lower(), [p.lower() for p in patterns]
    return any(fnmatchcase(item, pattern) for pattern in patterns)


def _pair(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[tuple[str, Any, Any]]:
    """(label, old statement or MISSING, new statement or MISSING), in the new document's order."""
    pairs: list[tuple[str, Any, Any]] = []
    old_by_sid = {s["Sid"]: s for s in before if s.get("Sid")}
    old_rest = [s for s in before if not s.get("Sid")]
    new_rest: list[tuple[int, dict[str, Any]]] = []
    for index, statement in enumerate(after):
        sid = statement.get("Sid")
        if sid:
            pairs.append((str(sid), old_by_sid.pop(sid, MISSING), statement))
        else:
            new_rest.append((index, statement))
    unmatched = []
    for index, statement in new_rest:  # unchanged, then same actions, then by order
        match = next((s for s in old_rest if s == statement), None) or next(
            (s for s in old_rest if _items(s, "Action") == _items(statement, "Action")), None
        )
        if match is None:
            unmatched.append((index, statement))
            continue
        old_rest.remove(match)
        pairs.append((f"#{index + 1}", match, statement))
    for index, statement in unmatched:
        pairs.append((f"#{index + 1}", old_rest.pop(0) if old_rest else MISSING, statement))
    pairs += [(sid, statement, MISSING) for sid, statement in old_by_sid.items()]
    pairs += [(f"removed #{n + 1}", statement, MISSING) for n, statement in enumerate(old_rest)]
    return pairs


def _describe(statement: dict[str, Any]) -> str:
    actions = ", ".join(_items(statement, "Action") or [f"not {a}" for a in _items(statement, "NotAction")])
    resources = ", ".join(_items(statement, "Resource") or [f"not {r}" for r in _items(statement, "NotResource")])
    text = f"{statement.get('Effect', 'Allow')} `{actions}`" + (f" on `{resources}`" if resources else "")
    if statement.get("Principal"):
        text += f" for `{json.dumps(statement['Principal'], sort_keys=True)}`"
    if statement.get("Condition"):
        text += f" if `{json.dumps(statement['Condition'], sort_keys=True)}`"
    return text


def _condition_values(condition: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    values = {}
    for operator, keys in condition.items():
        for key, value in (keys or {}).items():
            values[(operator, key)] = [str(v) for v in (value if isinstance(value, list) else [value])]
    return values


def _condition_loosens(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A condition key dropped, or a value (pattern) the old values did not cover: `a/*` loosens `a/b/*`."""
    before, after = _condition_values(old), _condition_values(new)
    if any(key not in after for key in before):
        return True
    return any(not _covered(v, before[key], True) for key, values in after.items() if key in before for v in values)


def _compare(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], bool]:
    """What changed in one statement, and whether the change grants more."""
    details: list[str] = []
    grants_more = narrows = False
    for field in LIST_FIELDS:
        old_items, new_items = _items(old, field), _items(new, field)
        if old_items == new_items:
            continue
        added = [i for i in new_items if i not in old_items]
        removed = [i for i in old_items if i not in new_items]
        details.append(f"{field}: " + ", ".join([f"+ `{i}`" for i in added] + [f"− `{i}`" for i in removed]))
        case_sensitive = "Action" not in field
        more = any(not _covered(i, old_items, case_sensitive) for i in new_items)
        less = any(not _covered(i, new_items, case_sensitive) for i in old_items)
        if field.startswith("Not"):
            more, less = less, more
        grants_more, narrows = grants_more or more, narrows or less
    for field in OTHER_FIELDS:
        if old.get(field) != new.get(field):
            details.append(
                f"{field}: `{json.dumps(old.get(field), sort_keys=True)}` → "
                f"`{json.dumps(new.get(field), sort_keys=True)}`"
            )
            if field == "Condition":
                grants_more = grants_more or _condition_loosens(old.get(field) or {}, new.get(field) or {})
            elif field != "Effect":
                grants_more = grants_more or field.endswith("Principal")
    if old.get("Effect", "Allow") != new.get("Effect", "Allow"):
        return details, new.get("Effect", "Allow") == "Allow"
    if new.get("Effect", "Allow") == "Deny":
        return details, narrows
    return details, grants_more


def policy_summary(text: str) -> str:
    """`Allow s3:GetObject on ...; ...` for a policy JSON string, or "" when it is not one."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return ""
    return "; ".join(_describe(statement) for statement in _statements(document))


def diff_policy(before: Any, after: Any, path: str) -> list[FieldChange]:
    """One change per added, removed or changed statement, with a readable note."""
    changes = []
    for label, old, new in _pair(_statements(before), _statements(after)):
        if old == new:
            continue
        where = f"{path}: statement {label}"
        if old is MISSING:
            widens = new.get("Effect", "Allow") == "Allow"
            changes.append(FieldChange(where, MISSING, new, note=f"added: {_describe(new)}", widens=widens))
        elif new is MISSING:
            widens = old.get("Effect", "Allow") == "Deny"
            changes.append(FieldChange(where, old, MISSING, note=f"removed: {_describe(old)}", widens=widens))
        else:
            details, widens = _compare(old, new)
            changes.append(FieldChange(where, old, new, note="; ".join(details), widens=widens))
    return changes
