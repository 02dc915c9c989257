"""Loads `catalog/autoscaling.yaml`: the KEDA and cluster-autoscaler pins and the Prometheus queries."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pydantic

from serving_stack.facts.catalog import CATALOG_DIR
from serving_stack.facts.data import Data, load_model

# The operator's scaling adapter (a scale subresource per DGD service) that KEDA scales.
ADAPTER_API_VERSION = "nvidia.com/v1alpha1"
ADAPTER_KIND = "DynamoGraphDeploymentScalingAdapter"


@dataclass(frozen=True)
class HelmPin:
    repository: str
    chart: str
    version: str
    namespace: str


@dataclass(frozen=True)
class MetricQueries:
    selector_label: str
    queue_depth: str
    inflight_requests: str
    ttft_p50_seconds: str

    def for_dgd(self, namespace: str, dgd_name: str) -> MetricQueries:
        selector = f'{self.selector_label}="{namespace}-{dgd_name}"'
        return MetricQueries(
            self.selector_label,
            *(
                q.replace("$SELECTOR", selector)
                for q in (self.queue_depth, self.inflight_requests, self.ttft_p50_seconds)
            ),
        )


class Chart(Data):
    repository: str = pydantic.Field(pattern=r"^https://")
    chart: str
    version: str = pydantic.Field(pattern=r"^\d+\.\d+\.\d+$")
    namespace: str

    def pin(self) -> HelmPin:
        return HelmPin(self.repository, self.chart, self.version, self.namespace)


class ClusterAutoscalerChart(Chart):
    imageTag: str = pydantic.Field(pattern=r"^v\d+\.\d+\.\d+$")
    minKubernetes: str
    serviceAccount: str


class ScalingAdapter(Data):
    apiVersion: Literal["nvidia.com/v1alpha1"]
    kind: Literal["DynamoGraphDeploymentScalingAdapter"]
    source: str


class Metrics(Data):
    selectorLabel: str
    queueDepth: str = pydantic.Field(pattern=r"\$SELECTOR")
    inflightRequests: str = pydantic.Field(pattern=r"\$SELECTOR")
    ttftP50Seconds: str = pydantic.Field(pattern=r"\$SELECTOR")

    def queries(self) -> MetricQueries:
        return MetricQueries(self.selectorLabel, self.queueDepth, self.inflightRequests, self.ttftP50Seconds)


class AutoscalingFile(Data):
    schemaVersion: Literal[1]
    keda: Chart
    clusterAutoscaler: ClusterAutoscalerChart
    scalingAdapter: ScalingAdapter
    metrics: Metrics

    @pydantic.model_validator(mode="after")
    def _matches_code(self) -> AutoscalingFile:
        if (self.scalingAdapter.apiVersion, self.scalingAdapter.kind) != (ADAPTER_API_VERSION, ADAPTER_KIND):
            raise ValueError("scalingAdapter differs from autoscaling_plan.ADAPTER_API_VERSION / ADAPTER_KIND")
        return self


@functools.lru_cache(maxsize=4)
def load_autoscaling(root: Path = CATALOG_DIR) -> AutoscalingFile:
    return load_model(root / "autoscaling.yaml", AutoscalingFile, root)
