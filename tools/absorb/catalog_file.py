"""`catalog/targets.yaml` as `make absorb` writes it: one line per figure row, header comment included.

The text is a function of the data alone, so absorbing the same revision twice writes the same bytes.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import yaml

from serving_stack.facts.catalog import UNKNOWN
from tools.absorb.perf_table import FIGURES

HEADER = """\
# Serving-target catalog for NVIDIA Nemotron 3.5 Lightning on Dynamo. Written by `make absorb`
# (tools/absorb, docs/absorb.md) from the upstream recipe directory vendored verbatim under recipes/:
# do not edit by hand; absorb the next upstream revision instead.
# - targets: one per upstream manifest holding a DynamoGraphDeployment (id: its directory).
#   speculativeDecoding and routing are read from the manifest (the catalog checks they agree);
#   performance is the upstream performance table's row, each figure `unknown` where upstream
#   publishes none (summary and outputs show n/a, and the criteria verdict stays unknown);
#   syntheticAcceptanceLength is the fixed acceptance length a speculative row was measured with
#   (`unknown` also for a row without speculative decoding).
# - modelCache: upstream's claim and download Jobs; their size, checkpoints and env names are what a
#   stack gets unless it sets modelCache.size / modelCache.checkpoints.
# - retired: targets an absorbed revision removed or renamed, still selectable from their last
#   revision's manifest (retired/<lastCommit>/); a stack selecting one gets a warning naming the
#   successor. Dropped only with `make absorb ... DROP_RETIRED=<id>` when no stack selects it.
"""
RETIREMENT_FIELDS = ("commit", "date", "lastCommit", "successor", "closest")


def _scalar(value: Any) -> str:
    if value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    text = str(value)
    try:
        plain = bool(text) and "#" not in text and yaml.safe_load(text) == text  # reads back as the same string
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text)


def performance_line(figures: dict[str, Optional[float]]) -> str:
    return "{" + ", ".join(f"{key}: {_scalar(figures.get(key))}" for key in FIGURES) + "}"


def targets_yaml(data: dict[str, Any]) -> str:
    """`data` has the keys of `serving_stack.facts.catalog.CatalogFile`."""
    upstream, cache, benchmark, criteria = data["upstream"], data["modelCache"], data["benchmark"], data["criteria"]
    lines = [
        HEADER.rstrip("\n"),
        f"schemaVersion: {data['schemaVersion']}",
        "upstream:",
        *(
            f"  {key}: {_scalar(upstream[key]) if key != 'date' else json.dumps(upstream[key])}"
            for key in ("repository", "path", "commit", "date")
        ),
        "modelCache:",
        f"  claim: {_scalar(cache['claim'])}",
        "  downloadJobs:",
        *(f"    - {_scalar(path)}" for path in cache["downloadJobs"]),
        "benchmark:",
        f"  workload: {_scalar(benchmark['workload'])}",
        f"  source: {_scalar(benchmark['source'])}",
        "criteria:",
        f"  minTokensPerSecondPerUser: {_scalar(criteria['minTokensPerSecondPerUser'])}",
        f"  maxTtftP50Ms: {_scalar(criteria['maxTtftP50Ms'])}",
        "targets:",
    ]
    lines += _entries(data["targets"])
    if data.get("retired"):
        lines += ["retired:", *_entries(data["retired"])]
    return "\n".join(lines) + "\n"


def _entries(targets: list[dict[str, Any]]) -> list[str]:
    lines = []
    for target in targets:
        lines += [
            f"  - id: {_scalar(target['id'])}",
            f"    manifest: {_scalar(target['manifest'])}",
            f"    speculativeDecoding: {_scalar(target['speculativeDecoding'])}",
            f"    routing: {_scalar(target['routing'])}",
            f"    performance: {performance_line(target['performance'])}",
        ]
        if "retired" in target:
            lines.append(f"    retired: {_retirement_line(target['retired'])}")
    return lines


def _retirement_line(retired: dict[str, Any]) -> str:
    def value(key: str) -> str:
        if retired.get(key) is None:
            return "null"
        return json.dumps(retired[key]) if key == "date" else _scalar(retired[key])

    return "{" + ", ".join(f"{key}: {value(key)}" for key in RETIREMENT_FIELDS) + "}"
