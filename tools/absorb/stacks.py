"""The stacks of this repository (`Pulumi.<stack>.yaml`) and the catalog targets each selects."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Selection:
    stack_file: str
    index: int
    target_id: str


def selections(project_dir: Path) -> list[Selection]:
    """Every `targets[i].id` of every stack file, in file order."""
    project = yaml.safe_load((project_dir / "Pulumi.yaml").read_text())["name"]
    found: list[Selection] = []
    for path in sorted(project_dir.glob("Pulumi.*.yaml")):
        config = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
        for index, target in enumerate(config.get(f"{project}:targets") or []):
            found.append(Selection(path.name, index, str(target.get("id"))))
    return found
