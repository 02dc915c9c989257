"""What one SageMaker endpoint deploys, as plain values (the `SageMakerEndpoint` component's input)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping, Optional, Union

from serving_stack.config.sagemaker import Autoscaling, DataCapture, Deployment
from serving_stack.contract.outputs import ServingEndpoint
from serving_stack.facts.jumpstart import AdditionalModelData, S3ModelData


@dataclass(frozen=True)
class JumpStartSource:
    model_id: str
    version: str


@dataclass(frozen=True)
class HuggingFaceSource:
    repo: str
    pinned_image: bool


ModelSource = Union[JumpStartSource, HuggingFaceSource]


@dataclass(frozen=True)
class ModelContainer:
    """The SageMaker model's primary container. A Hugging Face container downloads the checkpoint from the
    Hub, so it runs without network isolation; `needs_hf_token`: add the token to its environment."""

    image: str
    environment: Mapping[str, str]
    model_data: Optional[S3ModelData]
    additional_model_data: tuple[AdditionalModelData, ...]
    enable_network_isolation: bool
    needs_hf_token: bool


@dataclass(frozen=True)
class ProductionVariant:
    name: str
    instance_type: str
    initial_instance_count: int
    model_data_download_timeout: Optional[int]
    container_startup_health_check_timeout: Optional[int]
    volume_size_gb: Optional[int]
    ebs_storage: bool
    inference_ami_version: Optional[str]


@dataclass(frozen=True)
class Scaling:
    """Target tracking on invocations per instance per minute."""

    min_capacity: int
    max_capacity: int
    target_invocations_per_instance: float
    scale_in_cooldown: int
    scale_out_cooldown: int

    @classmethod
    def of(cls, config: Autoscaling) -> Scaling:
        return cls(config.minCapacity, config.maxCapacity, config.targetInvocationsPerInstance,
                   config.scaleInCooldown, config.scaleOutCooldown)


@dataclass(frozen=True)
class RollbackAlarms:
    invocation_5xx_errors: int
    model_latency_p99_ms: int
    period_seconds: int
    evaluation_periods: int


@dataclass(frozen=True)
class BlueGreen:
    """Blue/green traffic shifting; sizes are percent of capacity."""

    type: Literal["CANARY", "LINEAR", "ALL_AT_ONCE"]
    canary_size: int
    linear_step_size: int
    wait_interval_seconds: int
    termination_wait_seconds: int
    maximum_execution_timeout_seconds: int
    rollback_alarms: RollbackAlarms

    @classmethod
    def of(cls, config: Deployment) -> BlueGreen:
        alarms = config.rollbackAlarms
        return cls(config.type, config.canarySize, config.linearStepSize, config.waitIntervalSeconds,
                   config.terminationWaitSeconds, config.maximumExecutionTimeoutSeconds,
                   RollbackAlarms(alarms.invocation5xxErrors, alarms.modelLatencyP99Ms, alarms.periodSeconds,
                                  alarms.evaluationPeriods))


@dataclass(frozen=True)
class Capture:
    enabled: bool
    sampling_percentage: int

    @classmethod
    def of(cls, config: DataCapture) -> Capture:
        return cls(config.enabled, config.samplingPercentage)


@dataclass(frozen=True)
class PlannedEndpoint:
    name: str
    region: str
    source: ModelSource
    container: ModelContainer
    variant: ProductionVariant
    scaling: Scaling
    deployment: BlueGreen
    data_capture: Capture
    kms_key_arn: Optional[str]
    endpoint: ServingEndpoint


def invoke_url(region: str, name: str) -> str:
    return f"https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{name}/invocations"
