"""gpu-resources: a container that asks for GPUs sets request = limit (a limit alone is fine: Kubernetes
then requests the same), and only pods pinned to GPU nodes ask for GPUs: a required node selection on
`nvidia.com/gpu.product` or `nemotron.nvidia.com/pool` in every term, plus a toleration of the
`nvidia.com/gpu` taint."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from ..names import GPU, GPU_PRODUCT_LABEL, GPU_TAINT_KEY, POOL_LABEL
from ..pods import pod_specs
from ..values import UNKNOWN, plain
from ..workloads import PodSpec, container_label, containers, node_selection, resource_count, tolerations

GPU_NODE_LABELS = (GPU_PRODUCT_LABEL, POOL_LABEL)


def gpu_pinned(pod: PodSpec) -> object:
    """True/False, or `UNKNOWN` when the pod's node selection or tolerations are not known."""
    selection, tolerated = node_selection(pod.spec), tolerations(pod.spec)
    if UNKNOWN in (selection, tolerated):
        return UNKNOWN
    on_gpu_nodes = bool(selection) and all(
        any(key in GPU_NODE_LABELS and operator in ("In", "Exists") for key, operator, _ in term) for term in selection
    )
    tolerates_gpu_taint = any(key == GPU_TAINT_KEY and effect in ("", "NoSchedule") for key, _, _, effect in tolerated)
    return on_gpu_nodes and tolerates_gpu_taint


def validate_gpu_resources(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for pod in pod_specs(args.resource_type, plain(args.props)):
        asks_for_gpus = False
        for container in containers(pod.spec):
            request = resource_count(container, "requests", GPU)
            limit = resource_count(container, "limits", GPU)
            if request in (None, 0) and limit in (None, 0):
                continue
            asks_for_gpus = True
            if UNKNOWN in (request, limit):
                continue
            if limit is None:
                report_violation(
                    f"{container_label(container, pod)} requests {GPU}={request} without a limit; "
                    f"set limits.{GPU} = requests.{GPU}",
                    None,
                )
            elif request is not None and request != limit:
                report_violation(
                    f"{container_label(container, pod)} requests {GPU}={request} but limits "
                    f"{GPU}={limit}; set request = limit",
                    None,
                )
        if asks_for_gpus and gpu_pinned(pod) is False:
            report_violation(
                f"{pod.owner} asks for {GPU} but is not pinned to GPU nodes: it needs a required node "
                f"affinity on {' or '.join(GPU_NODE_LABELS)} and a toleration of the {GPU_TAINT_KEY} "
                "taint",
                None,
            )
