"""What the preflight reports: one line per finding, naming the config key and the fix, and the exit status.

A blocker is what makes the first `pulumi up` fail (or wait out a budget) as the stack stands; a warning is
what may, or what the preflight could not check; a note says how a check was judged. Exit 1 with any blocker,
else 0; bad input (the stack file, the credentials, the kubeconfig) is exit 2 before any finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from serving_stack.errors import bounded

Severity = Literal["blocker", "warning", "note"]
SEVERITY_ORDER: dict[Severity, int] = {"blocker": 0, "warning": 1, "note": 2}
EXIT_CLEAR = 0
EXIT_BLOCKED = 1
EXIT_BAD_INPUT = 2
MAX_FINDING = 600  # characters of one finding line


@dataclass(frozen=True)
class Finding:
    """`key`: the config key the user edits (`aws.nodePools[0].availabilityZone`), or the secret's name;
    `problem`: what the world says; `fix`: what to do about it."""

    severity: Severity
    key: str
    problem: str
    fix: str

    def line(self) -> str:
        return bounded(f"{self.severity}: {self.key}: {self.problem}; {self.fix}", MAX_FINDING, quote=False)


def blocker(key: str, problem: str, fix: str) -> Finding:
    return Finding("blocker", key, problem, fix)


def warning(key: str, problem: str, fix: str) -> Finding:
    return Finding("warning", key, problem, fix)


def note(key: str, problem: str, fix: str) -> Finding:
    return Finding("note", key, problem, fix)


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Blockers first, then warnings, then notes; within each, in the order the checks found them."""
    return sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity])


def exit_status(findings: Iterable[Finding]) -> int:
    return EXIT_BLOCKED if any(f.severity == "blocker" for f in findings) else EXIT_CLEAR
