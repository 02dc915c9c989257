"""Facts: the project's data files (`catalog/`), loaded and validated; code interprets them.

`load_facts()` is the one entry point the program uses; each loader is cached, so the render and the
tests read every file once per process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from serving_stack.facts.aws import (
    AutoscalingFile,
    AwsCatalog,
    CapacityPricesFile,
    load_autoscaling,
    load_aws_catalog,
    load_capacity_prices,
)
from serving_stack.facts.catalog import (
    Catalog,
    CheckpointSizes,
    DownloaderFile,
    PlatformFile,
    load_catalog,
    load_checkpoint_sizes,
    load_downloader,
    load_platform,
)
from serving_stack.facts.dates import EksVersionsFile, load_eks_versions
from serving_stack.facts.durations import load_durations
from serving_stack.facts.gateway import GatewayPins, load_gateway_pins
from serving_stack.facts.monitoring import (
    DashboardSpec,
    MetricsCatalog,
    MonitoringFacts,
    load_dashboard_specs,
    load_metrics,
    load_monitoring,
)
from serving_stack.facts.placeholders import PlaceholderFacts, load_placeholder_facts
from serving_stack.facts.sagemaker import Estimate, LmiFile, load_instances_file, load_lmi
from serving_stack.facts.sagemaker import InstanceType as SageMakerInstanceType
from serving_stack.facts.strict_files import DATA_DIR

SAGEMAKER_INSTANCE_START = "sagemaker-instance-start"  # a step of catalog/durations.yaml


@dataclass(frozen=True)
class Facts:
    catalog: Catalog
    aws: AwsCatalog
    platform: PlatformFile
    sagemaker_instances: Mapping[str, SageMakerInstanceType]
    lmi: LmiFile
    sagemaker_provisioning: Estimate
    metrics: MetricsCatalog
    monitoring: MonitoringFacts
    dashboards: tuple[DashboardSpec, ...]
    capacity_prices: CapacityPricesFile
    autoscaling: AutoscalingFile
    checkpoints: CheckpointSizes
    downloader: DownloaderFile
    gateway: GatewayPins
    eks_versions: EksVersionsFile
    placeholders: PlaceholderFacts


def sagemaker_provisioning(root: Path = DATA_DIR) -> Estimate:
    """From CreateEndpoint to the instance starting the model download, at worst: the durations table's
    SageMaker instance start (catalog/durations.yaml), what the SageMaker wait budget allows for it."""
    step = load_durations(root).steps[SAGEMAKER_INSTANCE_START]
    return Estimate(value=step.worst, basis=step.source)


def load_facts(root: Path = DATA_DIR) -> Facts:
    return Facts(
        catalog=load_catalog(root),
        aws=load_aws_catalog(root),
        platform=load_platform(root),
        sagemaker_instances=load_instances_file(root).instances,
        lmi=load_lmi(root),
        sagemaker_provisioning=sagemaker_provisioning(root),
        metrics=load_metrics(root),
        monitoring=load_monitoring(root),
        dashboards=load_dashboard_specs(root),
        capacity_prices=load_capacity_prices(root),
        autoscaling=load_autoscaling(root),
        checkpoints=load_checkpoint_sizes(root),
        downloader=load_downloader(root),
        gateway=load_gateway_pins(root),
        eks_versions=load_eks_versions(root),
        placeholders=load_placeholder_facts(root),
    )
