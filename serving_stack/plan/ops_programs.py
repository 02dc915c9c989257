"""The ops programs (`ops/`) as the one ConfigMap they ship in, as the prewarm program does.

The smoke Job, the benchmark and the canary run them from its mount (`ops_pods.python_container`); a digest of
the programs a pod runs goes on its template, so a changed program runs again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from serving_stack.names import PART_OF_LABEL

OPS_PROGRAM_DIR = Path(__file__).resolve().parents[2] / "ops"
PROGRAM_FILES = ("smoke.py", "canary.py", "run_benchmark.py", "benchmark_compare.py")
PROGRAM_CONFIG_MAP = "nemotron-ops-programs"
PROGRAM_MOUNT = "/opt/nemotron-ops"
PART_OF = {PART_OF_LABEL: "nemotron-ops"}


def read_programs() -> dict[str, str]:
    return {name: (OPS_PROGRAM_DIR / name).read_text() for name in PROGRAM_FILES}


def programs_digest(programs: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(programs), sort_keys=True).encode()).hexdigest()


def program_config_map(namespace: str, programs: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": PROGRAM_CONFIG_MAP, "namespace": namespace, "labels": dict(PART_OF)},
        "data": dict(programs),
    }
