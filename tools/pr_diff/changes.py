"""What one changed field looks like, shared by the value and IAM diffs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SECRET = "[secret]"


class _Missing:
    """The value of a field that one side does not have."""

    def __repr__(self) -> str:
        return "(absent)"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class FieldChange:
    """One changed field. `hidden` changes carry no values; `note` replaces the values when set (IAM)."""

    path: str
    before: Any
    after: Any
    hidden: bool = False
    note: str = ""
    widens: bool = False

    @property
    def added(self) -> bool:
        return self.before is MISSING

    @property
    def removed(self) -> bool:
        return self.after is MISSING
