"""The Monitoring component under mocks: the monitoring CRDs in a release of their own, what needs them waiting
for that release only; pinned kube-prometheus-stack that selects every monitor and rule,
dcgm-exporter on GPU nodes only with a labelled ServiceMonitor, the PrometheusRule and the dashboards; or,
with an existing Prometheus, only the labelled objects. Expected values come from the data files."""

from __future__ import annotations

import json

import pytest
import yaml
from aws_helpers import inputs, the
from monitoring_helpers import monitoring_plan, run_monitoring

from serving_stack.errors import ConfigError
from serving_stack.facts.monitoring import load_dashboard_specs, load_monitoring
from serving_stack.facts.strict_files import DATA_DIR
from serving_stack.names import GPU_LABEL, GPU_TAINT
from serving_stack.plan.monitoring import SELECT_EVERYTHING

RELEASE, NAMESPACE = "kubernetes:helm.sh/v3:Release", "kubernetes:core/v1:Namespace"
RULE, SERVICE_MONITOR = (
    "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
    "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
)
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
CHARTS = load_monitoring().charts


def releases(run) -> dict[str, dict]:
    return {r["chart"]: r for r in inputs(run, RELEASE)}


def test_kube_prometheus_stack_is_pinned_and_selects_every_monitor_and_rule():
    stack = releases(run_monitoring(monitoring_plan()))[CHARTS.kubePrometheusStack.chart]
    pin = CHARTS.kubePrometheusStack
    assert (stack["name"], stack["version"], stack["namespace"]) == (pin.releaseName, pin.version, "monitoring")
    assert stack["repositoryOpts"] == {"repo": pin.repository}
    spec = stack["values"]["prometheus"]["prometheusSpec"]
    assert spec["podMonitorSelectorNilUsesHelmValues"] is False and spec["podMonitorNamespaceSelector"] == {}
    assert spec["ruleSelectorNilUsesHelmValues"] is False and spec["serviceMonitorSelectorNilUsesHelmValues"] is False
    assert spec == SELECT_EVERYTHING
    assert all(
        stack["values"][job] == {"enabled": False}
        for job in ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy")
    )


def test_dcgm_exporter_runs_on_gpu_nodes_only_tolerating_their_taint():
    run = run_monitoring(monitoring_plan())
    dcgm = releases(run)[CHARTS.dcgmExporter.chart]
    assert (dcgm["name"], dcgm["version"]) == (CHARTS.dcgmExporter.releaseName, CHARTS.dcgmExporter.version)
    values = dcgm["values"]
    assert values["tolerations"] == [{"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}]
    (term,) = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": GPU_LABEL, "operator": "Exists"}]}
    assert values["serviceMonitor"] == {"enabled": False}
    monitor = the(run, SERVICE_MONITOR)
    assert monitor["metadata"]["labels"] == {"release": CHARTS.kubePrometheusStack.releaseName}
    assert monitor["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": CHARTS.dcgmExporter.chart,
        "app.kubernetes.io/instance": CHARTS.dcgmExporter.releaseName,
    }
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == CHARTS.dcgmExporter.metricsPortName and endpoint["honorLabels"] is True


def test_rule_and_service_monitor_wait_for_the_crds_release_and_not_the_stack():
    """The CRDs come in a release of their own (kube-prometheus-stack with crds.enabled false, installing
    beside them), kept on uninstall like kube-prometheus-stack's own crds/ directory."""
    run = run_monitoring(monitoring_plan())
    by_chart = {r.inputs["chart"]: r for r in run.of_type(RELEASE)}
    crds, stack = by_chart[CHARTS.prometheusOperatorCrds.chart], by_chart[CHARTS.kubePrometheusStack.chart]
    for token in (RULE, SERVICE_MONITOR):
        (resource,) = run.of_type(token)
        assert f"{RELEASE}::{crds.name}" in resource.depends_on
        assert f"{RELEASE}::{stack.name}" not in resource.depends_on
    assert f"{RELEASE}::{crds.name}" in stack.depends_on
    assert stack.inputs["values"]["crds"] == {"enabled": False}
    assert crds.inputs["values"]["crds"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert crds.inputs["version"] == CHARTS.prometheusOperatorCrds.version
    assert the(run, NAMESPACE)["metadata"]["name"] == "monitoring"


def test_the_crds_release_comes_from_the_stacks_operator_version(tmp_path):
    """catalog/monitoring.yaml: both pins name the Prometheus Operator they come from, and must agree."""
    data = yaml.safe_load((DATA_DIR / "monitoring.yaml").read_text())
    data["charts"]["prometheusOperatorCrds"]["operatorVersion"] = "v0.92.1"
    (tmp_path / "monitoring.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="different operator versions"):
        load_monitoring(tmp_path)


def test_prometheus_rule_is_labelled_for_the_release_and_has_a_group_per_target():
    plan = monitoring_plan()
    rule = the(run_monitoring(plan), RULE)
    assert rule["metadata"]["labels"]["release"] == CHARTS.kubePrometheusStack.releaseName
    assert rule["metadata"]["namespace"] == "monitoring"
    assert [g["name"] for g in rule["spec"]["groups"]] == [g["name"] for g in plan.prometheus_rule["spec"]["groups"]]
    assert len(rule["spec"]["groups"]) == 3  # two targets and the canaries


def test_dashboards_are_config_maps_the_grafana_sidecar_loads():
    maps = inputs(run_monitoring(monitoring_plan()), CONFIG_MAP)
    specs = {s.uid: s for s in load_dashboard_specs()}
    assert len(maps) == len(specs) == 3
    for config_map in maps:
        assert config_map["metadata"]["labels"] == {"grafana_dashboard": "1"}
        ((key, text),) = config_map["data"].items()
        dashboard = json.loads(text)
        assert key == f"{dashboard['uid']}.json" and dashboard["title"] == specs[dashboard["uid"]].title


def test_existing_prometheus_gets_labelled_objects_and_no_release():
    plan = monitoring_plan(install_prometheus=False)
    run = run_monitoring(plan)
    assert list(releases(run)) == [CHARTS.dcgmExporter.chart]
    assert run.of_type(NAMESPACE) == []
    for token in (RULE, SERVICE_MONITOR):
        (resource,) = run.of_type(token)
        assert resource.inputs["metadata"]["labels"]["release"] == "prometheus"
        assert not [d for d in resource.depends_on if d.startswith(RELEASE)]
    metrics = plan.dynamo_platform_values["dynamo-operator"]["dynamo"]["metrics"]
    assert metrics == {
        "prometheusEndpoint": "http://prometheus-operated.observability.svc:9090",
        "podMonitors": {"enabled": True, "labels": {"release": "prometheus"}},
    }


def test_without_dcgm_exporter_no_exporter_and_no_service_monitor():
    run = run_monitoring(monitoring_plan(install_dcgm_exporter=False))
    assert sorted(releases(run)) == sorted([CHARTS.kubePrometheusStack.chart, CHARTS.prometheusOperatorCrds.chart])
    assert run.of_type(SERVICE_MONITOR) == []


def test_platform_values_point_the_planner_at_the_installed_prometheus():
    pin = CHARTS.kubePrometheusStack
    # The chart names its Service <fullname>-prometheus, fullname = the release name when it contains the
    # chart name (trimmed to 26 characters): the fact in catalog/monitoring.yaml must agree.
    assert pin.chart in pin.releaseName and len(pin.releaseName) <= 26
    assert pin.prometheusService == f"{pin.releaseName}-prometheus"
    metrics = monitoring_plan().dynamo_platform_values["dynamo-operator"]["dynamo"]["metrics"]
    assert (
        metrics["prometheusEndpoint"]
        == f"http://{pin.prometheusService}.monitoring.svc.cluster.local:{pin.prometheusPort}"
    )
    assert metrics["podMonitors"] == {"enabled": True, "labels": {"release": pin.releaseName}}
