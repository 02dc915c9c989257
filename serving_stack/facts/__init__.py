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
    NodeReadyFile,
    load_autoscaling,
    load_aws_catalog,
    load_capacity_prices,
    load_node_ready_file,
)
from serving_stack.facts.catalog import (
    Catalog,
    CheckpointSizes,
    PlatformFile,
    load_catalog,
    load_checkpoint_sizes,
    load_platform,
)
from serving_stack.facts.dates import EksVersionsFile, load_eks_versions
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
from serving_stack.facts.sagemaker import Estimate, LmiFile, load_instances, load_instances_file, load_lmi
from serving_stack.facts.sagemaker import InstanceType as SageMakerInstanceType
from serving_stack.facts.strict_files import DATA_DIR


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
    node_ready: NodeReadyFile
    checkpoints: CheckpointSizes
    gateway: GatewayPins
    eks_versions: EksVersionsFile
    placeholders: PlaceholderFacts


def load_facts(root: Path = DATA_DIR) -> Facts:
    return Facts(
        catalog=load_catalog(root),
        aws=load_aws_catalog(root),
        platform=load_platform(root),
        sagemaker_instances=load_instances(root),
        lmi=load_lmi(root),
        sagemaker_provisioning=load_instances_file(root).provisioningSeconds,
        metrics=load_metrics(root),
        monitoring=load_monitoring(root),
        dashboards=load_dashboard_specs(root),
        capacity_prices=load_capacity_prices(root),
        autoscaling=load_autoscaling(root),
        node_ready=load_node_ready_file(root),
        checkpoints=load_checkpoint_sizes(root),
        gateway=load_gateway_pins(root / "gateway.yaml"),
        eks_versions=load_eks_versions(root),
        placeholders=load_placeholder_facts(root),
    )
