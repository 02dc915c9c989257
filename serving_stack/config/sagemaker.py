"""Config of the managed serving path: SageMaker real-time endpoints, from JumpStart or Hugging Face.

Shapes and ranges are checked here (`parse_stack_config`); the checks that span fields or need the catalog
data (`check_sagemaker`) and what needs the region (the JumpStart spec, the LMI image,
`plan_sagemaker_endpoints`) run in `serving_stack.plan.sagemaker` while planning, still before any resource.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Optional

import pydantic

from serving_stack.config.types import AsciiText, Block, FreeFormStrings, Int32, Region, aws_arn, matching

# Pulumi auto-names the model, endpoint config, role and capture bucket `<name>-<role>-<7 hex>`; the
# longest, `-capture-xxxxxxx`, must fit S3's and SageMaker's 63 characters.
EndpointName = Annotated[
    str,
    matching(
        r"^[a-z0-9]([-a-z0-9]{0,45}[a-z0-9])?$",
        "an endpoint name: lower-case letters, digits and '-', at most 47 characters (derived names add 16)",
    ),
]
VariantName = Annotated[str, matching(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$", "a variant name such as AllTraffic")]
KmsKeyArn = Annotated[str, aws_arn("kms")]
EcrImage = Annotated[
    str,
    matching(
        r"^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/[a-z0-9._/-]+"
        r"(:(?!latest\Z)[A-Za-z0-9._-]+|@sha256:[a-f0-9]{64})$",
        "an ECR image pinned by a tag other than 'latest' or by an @sha256 digest",
    ),
]
# A directory of the project, relative to its root: no absolute path, no `.` or `..` step out of it (the plan
# also refuses one that resolves, through a symlink, outside the project).
ProjectDirectory = Annotated[
    str,
    matching(
        r"(?!\.\.?(/|\Z))[A-Za-z0-9_-][A-Za-z0-9._-]*(/(?!\.\.?(/|\Z))[A-Za-z0-9_-][A-Za-z0-9._-]*)*",
        "a directory inside the project, relative to its root, such as catalog/jumpstart (no '..', not absolute)",
    ),
]
# An S3 prefix: a bucket name (S3 naming rules) and a key prefix ending in `/`, or the bucket's root.
S3Prefix = Annotated[
    str,
    matching(
        r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/([A-Za-z0-9!_.*'()=+-]+/)*$",
        "an S3 prefix such as s3://my-bucket/models/nemotron/ (ending in '/')",
    ),
]
TimeoutSeconds = Annotated[int, pydantic.Field(ge=60, le=3600)]
# The settings the listed containers read (catalog/sagemaker_lmi.yaml, argumentForms); used with fullmatch.
CONTAINER_SETTING = re.compile(r"(OPTION|SM_VLLM)_[A-Z0-9_]+")


class JumpStartModel(Block):
    """A pinned JumpStart model. No public JumpStart id for Nemotron 3.5 Lightning is known; the id is
    config so that one can be used the day it is listed (and pinned into `catalog/jumpstart/`)."""

    modelId: AsciiText
    """The JumpStart model id (`model_id` in the JumpStart content bucket's manifest)."""
    version: AsciiText
    """The pinned JumpStart model version, as the content bucket's manifest lists it."""
    acceptEula: bool = False
    """Accept the model's end-user license; required for gated JumpStart models (SageMaker
    `ModelAccessConfig.AcceptEula`)."""


class ModelData(Block):
    """The checkpoint staged in S3 as the Hub serves it (`config.json`, the safetensors, the tokenizer). SageMaker
    copies it to the instance before the container starts, so the model runs with network isolation and without
    the Hub or a token (docs/sagemaker.md, "Weights from S3", says how to stage it)."""

    s3Uri: S3Prefix
    """The S3 prefix, ending in `/`, holding the checkpoint's files uncompressed (SageMaker
    `ModelDataSource.S3DataSource`, `CompressionType: None`), in the endpoint's Region."""
    kmsKeyArn: Optional[KmsKeyArn] = None
    """The customer managed KMS key the objects are encrypted with (SSE-KMS), which the endpoint's role may decrypt;
    unset: SSE-S3 or the bucket's default key."""


class HuggingFaceModel(Block):
    """A Hugging Face checkpoint on the LMI or SageMaker vLLM container, for regions JumpStart does not list.
    A SageMaker container cannot read Secrets Manager, so a token sent with `sendHfToken` is a Pulumi secret in
    state but plain to anyone allowed `sagemaker:DescribeModel`; the secret-handling policy reports it."""

    repo: AsciiText
    """The Hugging Face repository of the checkpoint, one catalog/sagemaker_lmi.yaml lists."""
    lmiImage: Optional[EcrImage] = None
    """An LMI image of one's own in ECR, pinned by a tag other than `latest` or a digest; unset: the Region's LMI image
    from catalog/sagemaker_lmi.yaml."""
    options: FreeFormStrings = pydantic.Field(default_factory=dict)
    """Container settings (`OPTION_*`, `SM_VLLM_*` environment variables the LMI and SageMaker vLLM containers read)
    over the catalog's; credentials refused."""
    sendHfToken: bool = False
    """Put the `hfToken` secret into the model's environment as HF_TOKEN, for a gated repo read from the Hub (plain to
    anyone allowed `sagemaker:DescribeModel`)."""
    modelData: Optional[ModelData] = None
    """The checkpoint staged in S3 (recommended: faster start, network isolation, no token); unset: downloaded from the
    Hub at container start."""


class Autoscaling(Block):
    """Target tracking on `SageMakerVariantInvocationsPerInstance` (invocations per instance per minute); an
    instance-type change goes through `enabled: false` first (docs/sagemaker.md, "Changing the instance type")."""

    enabled: bool = True
    """Register the variant as an Application Auto Scaling target with the target-tracking policy; false first to change
    the instance type."""
    instanceType: AsciiText
    """The endpoint's `instanceType`, repeated as a guard: SageMaker fails an UpdateEndpoint that changes a scaling
    target's instance type."""
    minCapacity: Int32 = pydantic.Field(default=1, ge=1, description="Application Auto Scaling: int32")
    maxCapacity: Int32 = pydantic.Field(ge=1, description="Application Auto Scaling: int32")
    targetInvocationsPerInstance: float = pydantic.Field(
        gt=0, le=1_000_000, description="per instance per minute; at most a million (16,000 a second)"
    )
    scaleInCooldown: Int32 = pydantic.Field(default=600, ge=0, description="seconds; Application Auto Scaling: int32")
    scaleOutCooldown: Int32 = pydantic.Field(default=300, ge=0, description="seconds; Application Auto Scaling: int32")


class Timeouts(Block):
    """Unset means the JumpStart spec's value, or the LMI default in `catalog/sagemaker_lmi.yaml`."""

    modelDataDownload: Optional[TimeoutSeconds] = None
    """Seconds SageMaker may take to download the model data to the instance (`ModelDataDownloadTimeoutInSeconds`,
    60-3600)."""
    containerStartupHealthCheck: Optional[TimeoutSeconds] = None
    """Seconds SageMaker waits for the container's first passing `/ping` (`ContainerStartupHealthCheckTimeoutInSeconds`,
    60-3600)."""


class DataCapture(Block):
    enabled: bool = False
    """Capture requests and responses into an S3 bucket the stack creates (SageMaker `DataCaptureConfig`)."""
    samplingPercentage: int = pydantic.Field(default=5, ge=0, le=100)
    """Percent of the invocations captured (`InitialSamplingPercentage`, 0-100)."""


class RollbackAlarms(Block):
    """The CloudWatch alarms that roll a blue/green deployment back."""

    invocation5xxErrors: Int32 = pydantic.Field(default=1, ge=1, description="Sum per period that trips the alarm")
    modelLatencyP99Ms: int = pydantic.Field(
        default=60_000, gt=0, le=3_600_000, description="at most an hour, longer than any real-time invocation"
    )
    # CloudWatch PutMetricAlarm allows Period x EvaluationPeriods up to one day (86,400 s) for periods under an
    # hour; the stack's window is tighter: it must fit the bake, waitIntervalSeconds <= 3600 (`check_sagemaker`).
    periodSeconds: int = pydantic.Field(default=60, ge=60, le=3600, multiple_of=60)
    """Seconds per alarm evaluation period (CloudWatch `Period`): a multiple of 60, at most an hour."""
    evaluationPeriods: int = pydantic.Field(default=3, ge=1, le=60, description="60 x 60 s: the longest bake")


class Deployment(Block):
    """Blue/green traffic shifting (SageMaker deployment guardrails); sizes are percent of capacity.

    Ranges are the API's (TrafficRoutingConfig: canary <= 50% of the instance count, linear step 10-50%, waits
    0-3600 s; the sizes round up to whole instances, checked against `initialInstanceCount`) and the
    provider's (maximum execution timeout 600-14400 s: terraform-provider-aws narrows the API's 28800). The
    defaults fit the provider's fixed 60-minute InService wait with the default timeouts (checked per endpoint).
    """

    type: Optional[Literal["CANARY", "LINEAR", "ALL_AT_ONCE"]] = pydantic.Field(
        default=None,
        description="unset: CANARY when the variant's instance count holds the canary (at most 50% of the "
        "instances), else ALL_AT_ONCE with the reason in summary.md",
    )
    canarySize: int = pydantic.Field(default=10, ge=1, le=50)
    """Percent of the capacity the CANARY step shifts first (`CanarySize`, CAPACITY_PERCENT); 1-50."""
    linearStepSize: int = pydantic.Field(default=20, ge=10, le=50)
    """Percent of the capacity each LINEAR step shifts (`LinearStepSize`, CAPACITY_PERCENT); 10-50."""
    waitIntervalSeconds: int = pydantic.Field(default=300, ge=0, le=3600)
    """Seconds each shift bakes, watched by the rollback alarms, before the next (`WaitIntervalInSeconds`)."""
    terminationWaitSeconds: int = pydantic.Field(default=300, ge=0, le=3600)
    """Seconds the old (blue) fleet is kept after the shift completes (`TerminationWaitInSeconds`)."""
    maximumExecutionTimeoutSeconds: int = pydantic.Field(default=3600, ge=600, le=14400)
    """Seconds after which SageMaker stops the deployment and rolls back (`MaximumExecutionTimeoutInSeconds`; the AWS
    provider's 600-14400)."""
    rollbackAlarms: RollbackAlarms = RollbackAlarms()
    """The CloudWatch alarms whose ALARM state rolls the deployment back."""


class SageMakerEndpointConfig(Block):
    name: EndpointName
    """The endpoint's name, also the prefix of its model, endpoint config and role names; a gateway backend by it."""
    source: Literal["jumpstart", "huggingface"]
    """Where the model comes from: `jumpstart` (the `jumpstart` block) or `huggingface` (the `huggingface` block); set
    the one it names."""
    jumpstart: Optional[JumpStartModel] = None
    """The pinned JumpStart model; only with `source: jumpstart`."""
    huggingface: Optional[HuggingFaceModel] = None
    """The Hugging Face checkpoint and container; only with `source: huggingface`."""
    instanceType: AsciiText
    """The SageMaker instance type (`ml.*`, catalog/sagemaker_instances.yaml), checked against the model's spec or the
    checkpoint's fit."""
    initialInstanceCount: Int32 = pydantic.Field(default=1, ge=1, description="SageMaker API: int32")
    variantName: VariantName = "AllTraffic"
    """The production variant's name (SageMaker `VariantName`)."""
    autoscaling: Autoscaling
    """Target tracking of the variant's instance count (Application Auto Scaling)."""
    timeouts: Timeouts = Timeouts()
    """Model download and container startup timeouts."""
    volumeSizeGb: Optional[int] = pydantic.Field(default=None, ge=1, le=512)
    """The ML storage volume per instance, in GB (`VolumeSizeInGB`); unset: the instance's or the spec's; not on
    instance types with NVMe instance storage."""
    kmsKeyArn: Optional[KmsKeyArn] = None
    """The KMS key of the endpoint config (`KmsKeyId`): the ML storage volume's and the captured data's; unset:
    AWS-managed; on NVMe-only instance types only with data capture."""
    dataCapture: DataCapture = DataCapture()
    """Request and response capture into S3."""
    deployment: Deployment = Deployment()
    """Blue/green traffic shifting and rollback on update (SageMaker deployment guardrails)."""

    @property
    def sends_hf_token(self) -> bool:
        return self.source == "huggingface" and self.huggingface is not None and self.huggingface.sendHfToken


class SageMakerConfig(Block):
    region: Optional[Region] = None
    """The Region of the endpoints; unset: the stack's `aws:region`."""
    allowUnverifiedSpecs: bool = False
    """Accept JumpStart specs without provenance (hand-made; tests and demos only); every endpoint built from one is
    flagged."""
    specSource: Literal["snapshot", "s3"] = "snapshot"
    """`snapshot`: JumpStart specs from the committed copy under `snapshotDir` (repeatable, no S3 access); `s3`: read
    the content bucket (honouring AWS_JUMPSTART_CONTENT_BUCKET_OVERRIDE and friends)."""
    snapshotDir: ProjectDirectory = "catalog/jumpstart"
    """The project directory holding the JumpStart snapshot (tools/refresh_jumpstart_snapshot.py writes it)."""
    endpoints: list[SageMakerEndpointConfig] = pydantic.Field(default_factory=list)
    """SageMaker real-time endpoints; `[]`: none."""
