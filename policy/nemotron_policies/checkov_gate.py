"""checkov's Kubernetes checks on the rendered manifests, reported in the pack's gate as mandatory violations
of `checkov-kubernetes`.

checkov (bridgecrewio/checkov, pinned in `requirements-checkov.txt`, run from its own virtualenv because its
dependency pins conflict with pulumi's) judges the manifests the render writes (`build/<stack>/manifests`)
with the repository's checkov configs: a gate file (`.checkov/gate.yaml`) says which config judges which
manifest, each config lists the checks it skips and why. It cannot run inside CrossGuard (the pack's
virtualenv holds pulumi), so it is part of the offline gate: the runner adds its failures to the report, and
`make lint` runs the same configs.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
from collections import defaultdict
from pathlib import Path

import yaml

from .offline import Violation

POLICY_NAME = "checkov-kubernetes"
TIMEOUT_SECONDS = 600


class CheckovError(Exception):
    """checkov could not judge the manifests (missing, failed, unreadable output)."""


def _assignments(manifests: Path, gate: Path) -> dict[Path, list[Path]]:
    """Manifests by the checkov config that judges them."""
    entries = yaml.safe_load(gate.read_text())
    if not isinstance(entries, list) or not all(isinstance(e, dict) and {"files", "config"} <= set(e) for e in entries):
        raise CheckovError(f"{gate}: expected a list of {{files, config}} entries")
    assigned: dict[Path, list[Path]] = defaultdict(list)
    for manifest in sorted(manifests.glob("*.yaml")):
        for entry in entries:
            if fnmatch.fnmatch(manifest.name, str(entry["files"])):
                assigned[gate.parent / str(entry["config"])].append(manifest)
                break
    return assigned


def checkov_violations(manifests: Path, gate: Path, checkov: Path) -> list[Violation]:
    """One mandatory violation per failed checkov check on the manifests."""
    if not manifests.is_dir():
        raise CheckovError(f"{manifests}: no such directory (render the stack first)")
    violations = []
    for config, files in _assignments(manifests, gate).items():
        command = [str(checkov), "--config-file", str(config), "-o", "json"]
        for file in files:
            command += ["-f", str(file)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise CheckovError(f"{checkov}: {error}") from None
        if done.returncode not in (0, 1):
            raise CheckovError(f"{checkov} exited {done.returncode}: {done.stderr.strip()[-300:]}")
        try:
            reports = json.loads(done.stdout)
        except json.JSONDecodeError:
            raise CheckovError(f"{checkov}: output is not JSON") from None
        for report in reports if isinstance(reports, list) else [reports]:
            version = report.get("summary", {}).get("checkov_version", "?") if isinstance(report, dict) else "?"
            for check in report.get("results", {}).get("failed_checks", []) if isinstance(report, dict) else []:
                violations.append(
                    Violation(
                        POLICY_NAME,
                        "mandatory",
                        f"checkov {version} Kubernetes checks on the rendered manifests ({config.name})",
                        f"{Path(str(check.get('file_path', '?'))).name} {check.get('resource', '?')}: "
                        f"{check.get('check_id')} {check.get('check_name')}",
                    )
                )
    return violations
