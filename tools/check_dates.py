"""List every dated fact that ends within `listDays` (catalog/eks_versions.yaml) of today, or has ended.

    python -m tools.check_dates [--today YYYY-MM-DD]

Dated facts: the EKS support ends of the Kubernetes versions the committed stacks pin (cluster and pools),
of the minor a pinned image is tied to (cluster-autoscaler), and the day each capacity-block price goes
stale (the planner and the summaries leave a stale price out). Prints a table (soonest first); exits 1 when
one of them has ended (or has no date), else 0; a bad `--today` exits 2 naming it.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts, load_facts
from serving_stack.facts.dates import today as clock_today
from tools.stack_files import PROJECT_DIR, read_yaml


@dataclass(frozen=True)
class DatedFact:
    day: datetime.date
    what: str
    where: str


def _version_facts(version: str, where: str, facts: Facts) -> list[DatedFact]:
    dates = facts.eks_versions.versions.get(version)
    if dates is None:
        return [DatedFact(datetime.date.min, f"Kubernetes {version}: no EKS dates in catalog/eks_versions.yaml", where)]
    sourcing = " (date from secondary sources)" if dates.sourcing == "secondary" else ""
    return [
        DatedFact(dates.endOfStandardSupport, f"Kubernetes {version} leaves EKS standard support{sourcing}", where),
        DatedFact(dates.endOfExtendedSupport, f"Kubernetes {version} leaves EKS extended support{sourcing}", where),
    ]


def _stack_versions(project_dir: Path) -> list[tuple[str, str]]:
    """(version, where) for every Kubernetes version a committed stack file pins."""
    found = []
    for path in sorted(project_dir.glob("Pulumi.*.yaml")) + sorted(project_dir.glob("examples/*/Pulumi.*.yaml")):
        config: dict[str, Any] = (read_yaml(path) or {}).get("config") or {}
        for aws in (v for k, v in config.items() if k.endswith(":aws") and isinstance(v, dict)):
            cluster = aws.get("cluster") or {}
            pins = [(f"cluster.{kind}", cluster.get(kind) or {}) for kind in ("create", "existing")]
            pins += [(f"nodePools[{i}]", p) for i, p in enumerate(aws.get("nodePools") or []) if isinstance(p, dict)]
            where = f"{path.relative_to(project_dir)} aws"
            found += [
                (str(pin["kubernetesVersion"]), f"{where}.{name}.kubernetesVersion")
                for name, pin in pins
                if pin.get("kubernetesVersion")
            ]
    return found


def dated_facts(facts: Facts, project_dir: Path = PROJECT_DIR) -> list[DatedFact]:
    items = []
    for version, where in _stack_versions(project_dir):
        items += _version_facts(version, where, facts)
    autoscaler = facts.autoscaling.clusterAutoscaler
    minor = autoscaler.imageTag.removeprefix("v").rsplit(".", 1)[0]
    items += _version_facts(
        minor,
        f"catalog/autoscaling.yaml clusterAutoscaler (chart {autoscaler.version}, image {autoscaler.imageTag})",
        facts,
    )
    for instance_type, price in facts.capacity_prices.capacityBlock.items():
        items.append(
            DatedFact(
                price.reviewBy,
                f"capacity-block price ${price.usdPerHour}/h (as of {price.asOf}) is stale",
                f"catalog/capacity_prices.yaml capacityBlock.{instance_type}",
            )
        )
    return items


def report(items: list[DatedFact], today: datetime.date, horizon_days: int, provenance: str) -> str:
    horizon = today + datetime.timedelta(days=horizon_days)
    due = sorted({item for item in items if item.day <= horizon}, key=lambda item: (item.day, item.where))
    lines = [f"Dated facts ending by {horizon} ({horizon_days} days from {today}); EKS dates: {provenance}", ""]
    if not due:
        return "\n".join([*lines, "nothing ends in that window"])
    lines += ["| date | days | what | where |", "| --- | --- | --- | --- |"]
    for item in due:
        day = "unknown" if item.day == datetime.date.min else item.day.isoformat()
        days = "" if item.day == datetime.date.min else str((item.day - today).days)
        state = " (ENDED)" if item.day <= today else ""
        lines.append(f"| {day} | {days} | {item.what}{state} | {item.where} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.check_dates", description=__doc__.split("\n\n")[0])
    parser.add_argument("--today", help="the day to judge on, YYYY-MM-DD (default: $NEMOTRON_TODAY or the clock)")
    args = parser.parse_args(argv)
    try:
        try:
            day = datetime.date.fromisoformat(args.today) if args.today else clock_today()
        except ValueError:
            raise ConfigError("--today", f"{bounded(args.today)} is not a date", "YYYY-MM-DD") from None
        facts = load_facts()
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    items = dated_facts(facts)
    print(report(items, day, facts.eks_versions.listDays, facts.eks_versions.provenance()))
    return 1 if any(item.day <= day for item in items) else 0


if __name__ == "__main__":
    sys.exit(main())
