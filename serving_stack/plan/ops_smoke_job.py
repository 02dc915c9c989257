"""The smoke test of a serving target: a Job running `ops/smoke.py` against its frontend.

A Job on python slim, non-root, read-only root, no service-account token. It first waits (bounded) for
/v1/models to list the model. Pulumi awaits Jobs, so ordered after its DynamoGraphDeployment it is a deploy
gate. It has no `ttlSecondsAfterFinished`: Pulumi manages it, and a Job the TTL controller deletes is drift
that the next `pulumi refresh` turns into a rerun; kept, its log stays readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from serving_stack.plan.ops_pods import (
    NOBODY,
    Endpoint,
    object_metadata,
    ops_pod,
    python_container,
    target_labels,
    template_metadata,
)

SMOKE_CHECKS = 5  # ops/smoke.py CHECKS (a test keeps them equal)


@dataclass(frozen=True)
class SmokeSettings:
    image: str
    request_timeout_seconds: int
    backoff_limit: int

    def active_deadline_seconds(self, wait_seconds: int) -> int:
        """Every attempt may wait for the model, then run each check to its timeout (plus a minute to start)."""
        return (self.backoff_limit + 1) * (wait_seconds + SMOKE_CHECKS * self.request_timeout_seconds + 60)


def smoke_test_job(
    endpoint: Endpoint,
    namespace: str,
    settings: SmokeSettings,
    wait_seconds: int,
    template_annotations: Mapping[str, str],
) -> dict[str, Any]:
    """The smoke checks against the target's frontend, once it lists the model (waiting at most `wait_seconds`).
    A change of `template_annotations` (digests of what the test exercises) replaces the Job: it runs again."""
    labels = target_labels("nemotron-smoke-test", endpoint)
    args = [
        "--base-url",
        endpoint.base_url,
        "--model",
        endpoint.served_model_name,
        "--wait",
        str(wait_seconds),
        "--timeout",
        str(settings.request_timeout_seconds),
    ]
    resources = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}}
    container = python_container("smoke", "smoke.py", args, resources, settings.image, NOBODY)
    metadata = object_metadata(f"{endpoint.dgd_name}-smoke", namespace, labels, endpoint)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": settings.backoff_limit,
            "activeDeadlineSeconds": settings.active_deadline_seconds(wait_seconds),
            "template": {
                "metadata": template_metadata(labels, template_annotations),
                "spec": ops_pod([container], [], restartPolicy="Never"),
            },
        },
    }
