"""The cluster's Kubernetes version against EKS's support calendar on a given day.

The stack creates its cluster with `upgradePolicy.supportType: STANDARD`, which EKS accepts only while the
version is in standard support (AWS-FACTS.md, corrections 2026-12): a version past that end is refused
before any resource, and one that ends within `warnDays` is a warning in summary.md and on stderr.
"""

from __future__ import annotations

import datetime

from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError
from serving_stack.facts.dates import EksVersionsFile

KEY = "aws.cluster.create.kubernetesVersion"
EXISTING_KEY = "aws.cluster.existing.kubernetesVersion"


def _newest(calendar: EksVersionsFile, today: datetime.date) -> str:
    newest = calendar.newest_in_standard_support(today)
    return newest or f"none in catalog/eks_versions.yaml on {today.isoformat()}: add the calendar's next rows"


def check_cluster_version(
    config: StackConfig, calendar: EksVersionsFile, today: datetime.date
) -> tuple[list[ConfigError], list[str]]:
    """Errors for a created cluster's version that EKS does not take with STANDARD today; warnings for one
    that leaves standard support within `warnDays` (and for an existing cluster past it)."""
    cluster = config.aws.cluster if config.aws else None
    if cluster is None:
        return [], []
    create, existing = cluster.create, cluster.existing
    if create is None:
        version = existing.kubernetesVersion if existing else None
        dates = calendar.versions.get(version) if version else None
        if dates is None or today < dates.endOfStandardSupport:
            return [], []
        return [], [
            f"{EXISTING_KEY}: Kubernetes {version} left EKS standard support on {dates.endOfStandardSupport} "
            f"(extended support, charged, ends {dates.endOfExtendedSupport}); upgrade to {_newest(calendar, today)}"
        ]
    version = create.kubernetesVersion
    dates = calendar.versions.get(version)
    if dates is None:
        return [
            ConfigError(
                KEY,
                f"no EKS support dates for Kubernetes {version} in catalog/eks_versions.yaml",
                ", ".join(calendar.versions),
            )
        ], []
    if today < dates.released:
        return [ConfigError(KEY, f"EKS releases Kubernetes {version} on {dates.released}, after today ({today})")], []
    if today >= dates.endOfStandardSupport:
        return [
            ConfigError(
                KEY,
                f"Kubernetes {version} left EKS standard support on {dates.endOfStandardSupport} (today is {today}) "
                "and the cluster's upgradePolicy is STANDARD, which EKS sets only in standard support",
                _newest(calendar, today),
            )
        ], []
    left = (dates.endOfStandardSupport - today).days
    if left > calendar.warnDays:
        return [], []
    return [], [
        f"{KEY}: Kubernetes {version} leaves EKS standard support on {dates.endOfStandardSupport} ({left} days); "
        f"after that the stack refuses it: upgrade to {_newest(calendar, today)}"
    ]
