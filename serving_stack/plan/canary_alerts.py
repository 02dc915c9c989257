"""The canary alerts of one target: its probes fail, or its results stop coming.

The canary (`ops/canary.py`, a Deployment per target, `ops_canary.canary_deployment`) exports
`nemotron_canary_*` labelled {target, model}; Prometheus adds `namespace` and `pod` through its PodMonitor.
The rules select the target's canary pods by name, as the other rules select frontends and workers.

Stale covers three ways of losing the signal, each of which would otherwise read as "no alert, all well":
the probe loop stopped (last probe older than `CANARY_STALE_INTERVALS` intervals), Prometheus cannot scrape
the pod (`up == 0`), or Prometheus has no canary target at all (`absent(up)`: the Deployment is gone or
unschedulable, or the PodMonitor is not selected, the `release` label problem of docs/monitoring.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from serving_stack.facts.metrics import MetricsCatalog
from serving_stack.plan.ops_canary import canary_name

# One late probe is a slow request or scrape; three intervals without one is a probe loop that stopped.
CANARY_STALE_INTERVALS = 3


@dataclass(frozen=True)
class CanaryAlerting:
    """Every target has a canary probing it every `interval_seconds` (config `operability.canary`)."""

    interval_seconds: int

    @property
    def stale_after_seconds(self) -> int:
        return CANARY_STALE_INTERVALS * self.interval_seconds


class CanaryAlert(NamedTuple):
    name: str
    expr: str
    summary: str
    description: str


def canary_pods(namespace: str, dgd_name: str) -> str:
    """A selector of the canary Deployment's pods, `<deployment>-<replicaset hash>-<pod suffix>`."""
    return f'namespace="{namespace}", pod=~"{canary_name(dgd_name)}-[a-z0-9]+-[a-z0-9]+"'


def canary_alerts(
    namespace: str, target_id: str, dgd_name: str, canary: CanaryAlerting, metrics: MetricsCatalog
) -> list[CanaryAlert]:
    pods = canary_pods(namespace, dgd_name)
    success = f"{metrics.metric('canary', 'probeSuccess').name}{{{pods}}}"
    last_probe = f"{metrics.metric('canary', 'lastProbeTimestamp').name}{{{pods}}}"
    up = f"{metrics.metric('prometheus', 'up').name}{{{pods}}}"
    stale = canary.stale_after_seconds
    return [
        CanaryAlert(
            "NemotronCanaryFailing",
            f"min by (namespace) ({success}) < 1",
            f"{target_id}: canary requests fail",
            f"Every canary probe of {target_id} failed while this alert was pending: the endpoint does not "
            "answer a small chat request.",
        ),
        CanaryAlert(
            "NemotronCanaryStale",
            f"(time() - max by (namespace) ({last_probe}) > {stale})"
            f" or (max by (namespace) ({up}) == 0) or absent({up})",
            f"{target_id}: no fresh canary result",
            f"The canary of {target_id} reports nothing new: its last probe is older than {stale} s "
            f"({CANARY_STALE_INTERVALS} probe intervals), Prometheus cannot scrape it (up == 0), or Prometheus has "
            "no canary target at all. Whether the endpoint serves is unknown.",
        ),
    ]
