"""What one SageMaker endpoint deploys, as plain values (the `SageMakerEndpoint` component's input)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Optional, Union

from serving_stack.config.sagemaker import Autoscaling, DataCapture, Deployment
from serving_stack.contract.outputs import ServingEndpoint
from serving_stack.facts.jumpstart import AdditionalModelData, S3ModelData
from serving_stack.plan.placeholders import Placeholder

# Tags on the endpoint's model, config and endpoint: what it serves and from what, readable in AWS, by the
# cleanup of retained configs (docs/sagemaker.md) and by `summary.md`.
ENDPOINT_TAG = "nemotron.nvidia.com/sagemaker-endpoint"
MODEL_SOURCE_TAG = "nemotron.nvidia.com/model-source"
SPEC_PROVENANCE_TAG = "nemotron.nvidia.com/jumpstart-spec"
PRECISION_TAG = "nemotron.nvidia.com/precision"
UNVERIFIED = "unverified"


@dataclass(frozen=True)
class JumpStartSource:
    """`provenance`: where the spec was fetched (`SpecProvenance.label`), None for an unverified spec."""

    model_id: str
    version: str
    provenance: Optional[str]


@dataclass(frozen=True)
class HuggingFaceSource:
    """`precision_path`: how the recipe runs the checkpoint (`catalog/sagemaker_lmi.yaml`, `runsAs`).
    `container` / `vllm_version`: the listed container picked for the checkpoint's `minimum_vllm` (None with
    an image of one's own); `engine_arguments`: the recipe's vLLM arguments it is given; `placeholders`: what
    the image still lacks for a real `up`."""

    repo: str
    pinned_image: bool
    precision_path: str
    container: Optional[str] = None
    vllm_version: Optional[str] = None
    minimum_vllm: Optional[str] = None
    engine_arguments: Mapping[str, Optional[str]] = field(default_factory=lambda: MappingProxyType({}))
    placeholders: tuple[Placeholder, ...] = ()


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

    enabled: bool
    min_capacity: int
    max_capacity: int
    target_invocations_per_instance: float
    scale_in_cooldown: int
    scale_out_cooldown: int

    @classmethod
    def of(cls, config: Autoscaling) -> Scaling:
        return cls(
            config.enabled,
            config.minCapacity,
            config.maxCapacity,
            config.targetInvocationsPerInstance,
            config.scaleInCooldown,
            config.scaleOutCooldown,
        )


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

    @property
    def traffic_steps(self) -> int:
        """Traffic shifts, each followed by a bake of `wait_interval_seconds` (an upper bound for CANARY)."""
        if self.type == "LINEAR":
            return math.ceil(100 / self.linear_step_size)
        return 2 if self.type == "CANARY" else 1

    @classmethod
    def of(cls, config: Deployment, shifting: Literal["CANARY", "LINEAR", "ALL_AT_ONCE"]) -> BlueGreen:
        alarms = config.rollbackAlarms
        return cls(
            shifting,
            config.canarySize,
            config.linearStepSize,
            config.waitIntervalSeconds,
            config.terminationWaitSeconds,
            config.maximumExecutionTimeoutSeconds,
            RollbackAlarms(
                alarms.invocation5xxErrors, alarms.modelLatencyP99Ms, alarms.periodSeconds, alarms.evaluationPeriods
            ),
        )


def shifted_instances(instances: int, percent: int) -> int:
    """Instances a capacity-percent step moves: SageMaker rounds up to whole instances."""
    return math.ceil(instances * percent / 100)


@dataclass(frozen=True)
class Capture:
    enabled: bool
    sampling_percentage: int

    @classmethod
    def of(cls, config: DataCapture) -> Capture:
        return cls(config.enabled, config.samplingPercentage)


@dataclass(frozen=True)
class WaitBudget:
    """Worst-case seconds of a create and of a blue/green update, against the provider's InService wait."""

    provisioning: int
    model_download: int
    startup: int
    traffic_shifting: int
    termination: int

    @property
    def create_seconds(self) -> int:
        return self.provisioning + self.model_download + self.startup

    @property
    def update_seconds(self) -> int:
        return self.create_seconds + self.traffic_shifting + self.termination


@dataclass(frozen=True)
class PlannedEndpoint:
    """`notes`: what an operator should know but that is no error (a slower precision path), logged at `up`."""

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
    waits: WaitBudget
    notes: tuple[str, ...] = ()

    @property
    def spec_verified(self) -> bool:
        return not isinstance(self.source, JumpStartSource) or self.source.provenance is not None

    @property
    def tags(self) -> Mapping[str, str]:
        tags = {ENDPOINT_TAG: self.name}
        if isinstance(self.source, JumpStartSource):
            tags[MODEL_SOURCE_TAG] = f"jumpstart:{self.source.model_id}@{self.source.version}"
            tags[SPEC_PROVENANCE_TAG] = self.source.provenance or UNVERIFIED
        else:
            tags[MODEL_SOURCE_TAG] = f"huggingface:{self.source.repo}"
            tags[PRECISION_TAG] = self.source.precision_path
        return MappingProxyType(tags)


def invoke_url(region: str, name: str) -> str:
    return f"https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{name}/invocations"
