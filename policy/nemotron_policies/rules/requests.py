"""resource-requests (advisory): every container of a workload says what it needs (`resources.requests`,
or `limits`, which Kubernetes copies into requests). Without either, the pod is BestEffort: scheduled
anywhere and evicted first under node pressure."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from ..pods import pod_specs
from ..values import UNKNOWN, dig, plain
from ..workloads import container_label, containers


def validate_resource_requests(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for pod in pod_specs(args.resource_type, plain(args.props)):
        for container in containers(pod.spec, ("containers",)):
            resources = dig(container, "resources")
            if resources is UNKNOWN or UNKNOWN in (dig(resources, "requests"), dig(resources, "limits")):
                continue
            if not dig(resources, "requests") and not dig(resources, "limits"):
                report_violation(f"{container_label(container, pod)} sets no resource requests (cpu, memory)", None)
