"""Where an absorbed revision comes from: commit, its date, and its path in the upstream repository.

From a git checkout the files must be exactly `COMMIT` (HEAD is it, nothing changed below the
directory) and the date and path come from git. A plain copy (the shared reference, a tarball) needs
the date given, except when it is the commit the catalog already records; so does the catalog's own
vendored copy (it sits in this project's git repository, not upstream's).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional


class ProvenanceError(ValueError):
    """The commit, the date or the checkout state cannot be vouched for."""


@dataclass(frozen=True)
class Provenance:
    repository: str
    path: str
    commit: str
    date: str


def _git(directory: Path, *args: str) -> Optional[str]:
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=60, check=False
        )
    except FileNotFoundError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def resolve(
    directory: Path,
    commit: str,
    date: Optional[str],
    recorded: Provenance,
    *,
    plain_copy: bool = False,
) -> Provenance:
    """`plain_copy`: read `directory` as a plain copy even inside a git checkout (the catalog's own vendored
    copy lives in this project's repository, not upstream's)."""
    if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        raise ProvenanceError(f"COMMIT={commit!r} is not a git commit id (7 to 40 lower-case hex digits)")
    if date is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise ProvenanceError(f"DATE={date!r} is not YYYY-MM-DD")
    prefix = None if plain_copy else _git(directory, "rev-parse", "--show-prefix")
    if prefix is None:
        if date is None and commit != recorded.commit:
            raise ProvenanceError(
                f"{directory} is not a git checkout, so the date of {commit} is unknown: "
                "give DATE=YYYY-MM-DD (the commit date)"
            )
        return Provenance(recorded.repository, recorded.path, commit, date or recorded.date)
    full = _git(directory, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if full is None:
        raise ProvenanceError(f"commit {commit} is not in the git checkout of {directory}")
    head = _git(directory, "rev-parse", "HEAD")
    if head != full:
        raise ProvenanceError(f"{directory} is checked out at {head}, not {commit}: check out {commit} first")
    if _git(directory, "status", "--porcelain", "--", "."):
        raise ProvenanceError(f"{directory} has local changes: absorb a clean checkout of {commit}")
    committed = _git(directory, "show", "-s", "--format=%cs", full) or ""
    if date is not None and date != committed:
        raise ProvenanceError(f"DATE={date}, but git says {commit} was committed on {committed}")
    return Provenance(recorded.repository, prefix.rstrip("/") or recorded.path, commit, committed)
