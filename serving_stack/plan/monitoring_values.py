"""Helm values and monitoring.coreos.com objects of the monitoring stack (pure data).

The `release` label problem (ai-dynamo/dynamo#12003): the Dynamo operator's PodMonitors carry no
`release` label, and a kube-prometheus-stack Prometheus selects only monitors and rules labelled with its
release unless `*SelectorNilUsesHelmValues` is false. The stack's own install sets those to false with
`{}` namespace selectors (select everything, everywhere); with an existing Prometheus every object the
stack creates carries `release: <its release label>`, and the platform is asked to label its PodMonitors
the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serving_stack.facts.monitoring import DcgmExporterPin, KubePrometheusStackPin
from serving_stack.plan.alerts import API_VERSION, RELEASE_LABEL

SELECT_EVERYTHING = {
    "podMonitorSelectorNilUsesHelmValues": False,
    "podMonitorNamespaceSelector": {},
    "serviceMonitorSelectorNilUsesHelmValues": False,
    "serviceMonitorNamespaceSelector": {},
    "ruleSelectorNilUsesHelmValues": False,
    "ruleNamespaceSelector": {},
}


def kube_prometheus_stack_values() -> dict[str, Any]:
    """Select every PodMonitor, ServiceMonitor and PrometheusRule of the cluster. EKS runs the control plane
    (scheduler, controller manager, etcd are not scrapeable) and kube-proxy binds its metrics to
    127.0.0.1, so their scrape jobs and alerts would only ever report targets down."""
    return {
        "prometheus": {"prometheusSpec": dict(SELECT_EVERYTHING)},
        "kubeControllerManager": {"enabled": False},
        "kubeScheduler": {"enabled": False},
        "kubeEtcd": {"enabled": False},
        "kubeProxy": {"enabled": False},
    }


def prometheus_endpoint(pin: KubePrometheusStackPin, namespace: str) -> str:
    """The in-cluster URL of the Prometheus the stack installs (the Dynamo planner queries it)."""
    return f"http://{pin.prometheusService}.{namespace}.svc.cluster.local:{pin.prometheusPort}"


def dynamo_platform_metrics_values(prometheus_url: str, release_label: str) -> dict[str, Any]:
    """To merge into the dynamo-platform values: PodMonitors on explicitly (auto-detection needs the CRD at
    install time and sees nothing in an offline render), labelled for a release-selecting Prometheus
    (charts that template `dynamo.metrics.podMonitors.labels`; older ones ignore the key)."""
    return {
        "dynamo-operator": {
            "dynamo": {
                "metrics": {
                    "prometheusEndpoint": prometheus_url,
                    "podMonitors": {"enabled": True, "labels": {RELEASE_LABEL: release_label}},
                }
            }
        }
    }


def dcgm_exporter_values(gpu_node_label: str, gpu_taint: Mapping[str, str]) -> dict[str, Any]:
    """On GPU nodes only (nodes carrying `gpu_node_label`), tolerating their taint; the chart's own
    ServiceMonitor is off because the stack creates one (`dcgm_service_monitor`) it can label and validate."""
    return {
        "tolerations": [{"key": gpu_taint["key"], "operator": "Exists", "effect": gpu_taint["effect"]}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": gpu_node_label, "operator": "Exists"}]}]
                }
            }
        },
        "serviceMonitor": {"enabled": False},
    }


def dcgm_service_monitor(name: str, namespace: str, release_label: str, pin: DcgmExporterPin) -> dict[str, Any]:
    """Selects the chart's Service by its selector labels. `honorLabels` keeps the exporter's pod/namespace/
    container labels (the pod that holds the GPU) instead of renaming them `exported_*`."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "namespace": namespace, "labels": {RELEASE_LABEL: release_label}},
        "spec": {
            "selector": {
                "matchLabels": {
                    "app.kubernetes.io/name": pin.chart,
                    "app.kubernetes.io/instance": pin.releaseName,
                }
            },
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [{"port": pin.metricsPortName, "path": "/metrics", "interval": "15s", "honorLabels": True}],
        },
    }
