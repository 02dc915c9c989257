"""Monitoring of the serving targets: kube-prometheus-stack (or an existing Prometheus selected by its
`release` label), dcgm-exporter on the GPU nodes with its ServiceMonitor, the PrometheusRule of the
published criteria and SLOs, and the Grafana dashboards as ConfigMaps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components import custom_resource, helm_release
from serving_stack.facts.monitoring import HelmChartPin
from serving_stack.names import TypeTokens
from serving_stack.plan.monitoring import DASHBOARD_LABEL, MonitoringPlan


class Monitoring(pulumi.ComponentResource):
    """`crds_ready` is what creators of monitoring.coreos.com objects elsewhere (the Dynamo platform's
    PodMonitors, canary monitors) depend on: the CRDs arrive with a release of their own, so they wait for
    the CRDs and not for the whole kube-prometheus-stack (docs/cold-start.md), which installs beside them.
    `plan`: what to install (switches, charts, values) and the rules and dashboards to create."""

    crds_ready: list[pulumi.Resource]

    def __init__(self, name: str, plan: MonitoringPlan, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.MONITORING, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace: pulumi.Input[str] = plan.namespace
        if plan.create_namespace:
            namespace = k8s.core.v1.Namespace(
                f"{name}-namespace", metadata={"name": plan.namespace}, opts=child
            ).metadata.name

        def release(role: str, pin: HelmChartPin, values: Mapping[str, Any], *after: pulumi.Resource) -> Any:
            # Fixed release name, cluster-scoped objects named after it: delete the old release first.
            opts = pulumi.ResourceOptions(parent=self, delete_before_replace=True, depends_on=list(after))
            settings = {"values": dict(values), "cleanup_on_fail": True, "timeout": 900}
            return helm_release(f"{name}-{role}", pin.releaseName, pin, namespace, opts, **settings)

        self.crds_ready = []
        if plan.install_prometheus:
            self.crds_ready.append(release("crds", plan.crds_chart, plan.crds_values))
            release("prometheus", plan.prometheus_chart, plan.prometheus_values, *self.crds_ready)
        after_crds = pulumi.ResourceOptions(parent=self, depends_on=self.crds_ready)
        if plan.install_dcgm_exporter:
            release("dcgm-exporter", plan.dcgm_exporter_chart, plan.dcgm_exporter_values)
            custom_resource(f"{name}-dcgm-service-monitor", plan.dcgm_service_monitor, namespace, after_crds)
        custom_resource(f"{name}-rules", plan.prometheus_rule, namespace, after_crds)
        for uid, data in plan.dashboards.items():
            k8s.core.v1.ConfigMap(
                f"{name}-dashboard-{uid}",
                metadata={"name": f"{uid}-dashboard", "namespace": namespace, "labels": dict(DASHBOARD_LABEL)},
                data=dict(data),
                opts=child,
            )
        self.register_outputs({"namespace": namespace, "dashboards": sorted(plan.dashboards)})
