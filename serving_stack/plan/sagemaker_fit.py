"""Does a Hugging Face checkpoint fit the instance, and on which precision path does it run?

Tensor parallelism spreads the weights over every GPU of the instance (LMI `OPTION_TENSOR_PARALLEL_DEGREE:
max`), so the budget is the instance's total GPU memory at vLLM's utilization, minus a per-GPU overhead,
and what remains after the weights must hold a minimum cache. All numbers are data
(`catalog/sagemaker_lmi.yaml`, `fit`), so the check is as good as they are and names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from serving_stack.errors import ConfigError
from serving_stack.facts.sagemaker import Fit, HuggingFaceRepo, InstanceType, LmiFile, version_tuple


@dataclass(frozen=True)
class FitResult:
    usable_gb: float
    needed_gb: float
    precision_path: str
    note: Optional[str]


def _needed_gb(repo: HuggingFaceRepo, instance: InstanceType, fit: Fit) -> float:
    return repo.weightsGb + instance.gpus * fit.perGpuOverheadGb.value + fit.minimumCacheGb.value


def _usable_gb(instance: InstanceType, fit: Fit) -> float:
    return instance.gpus * instance.gpuMemoryGb * fit.gpuMemoryUtilization.value


def fits(repo: HuggingFaceRepo, instance: InstanceType, fit: Fit) -> bool:
    return _needed_gb(repo, instance, fit) <= _usable_gb(instance, fit)


def check_fit(
    repo_name: str,
    repo: HuggingFaceRepo,
    instance_type: str,
    instances: Mapping[str, InstanceType],
    lmi: LmiFile,
    key: str,
) -> FitResult:
    """The fit and precision path, or a `ConfigError` at `key` listing the instance types that fit."""
    instance, fit = instances[instance_type], lmi.fit
    usable, needed = _usable_gb(instance, fit), _needed_gb(repo, instance, fit)
    if needed > usable:
        fitting = [name for name, other in instances.items() if fits(repo, other, fit)]
        raise ConfigError(
            key,
            f"{repo_name} ({repo.precision}, ~{repo.weightsGb:g} GB of weights) does not fit "
            f"{instance_type}: {instance.gpus} x {instance.gpuMemoryGb} GB at "
            f"{fit.gpuMemoryUtilization.value:g} = {usable:g} GB usable, {needed:g} GB needed (weights + "
            f"{fit.perGpuOverheadGb.value:g} GB per GPU + {fit.minimumCacheGb.value:g} GB of cache)",
            ", ".join(fitting) or "none of the catalog's instance types",
        )
    if repo.precision != "nvfp4":
        return FitResult(usable, needed, repo.precision, None)
    if instance.gpuArchitecture in fit.nativeFp4Architectures:
        return FitResult(usable, needed, "nvfp4-native", None)
    note = (
        f"{repo_name} is NVFP4, which runs natively only on {', '.join(fit.nativeFp4Architectures)} GPUs; on "
        f"{instance_type} ({instance.gpu}, {instance.gpuArchitecture}) vLLM falls back to W4A16 (4-bit weights, "
        "16-bit activations): it fits, but is slower than on Blackwell"
    )
    return FitResult(usable, needed, "nvfp4-w4a16-fallback", note)


def check_vllm(repo_name: str, repo: HuggingFaceRepo, lmi: LmiFile, key: str) -> None:
    """The pinned LMI's vLLM must be at least the version the checkpoint's architecture needs."""
    container = lmi.container
    if version_tuple(container.vllmVersion) < version_tuple(repo.minimumVllm):
        raise ConfigError(
            key,
            f"the pinned LMI {container.lmiVersion} ({container.tag}) bundles vLLM "
            f"{container.vllmVersion}, but {repo_name} needs vLLM >= {repo.minimumVllm} "
            f"({repo.vllmBasis})",
            "an LMI release with a newer vLLM in catalog/sagemaker_lmi.yaml, or huggingface.lmiImage",
        )
