"""Does a Hugging Face checkpoint fit the instance, and on which precision path does the recipe run it?

Tensor parallelism spreads the weights over every GPU of the instance (LMI `OPTION_TENSOR_PARALLEL_DEGREE:
max`), so the budget is the instance's total GPU memory at vLLM's utilization, minus a per-GPU overhead,
and what remains after the weights must hold a minimum cache. All numbers are data
(`catalog/sagemaker_lmi.yaml`, `fit`), so the check is as good as they are and names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from serving_stack.errors import ConfigError
from serving_stack.facts.sagemaker import Container, Fit, HuggingFaceRepo, InstanceType, LmiFile


@dataclass(frozen=True)
class FitResult:
    usable_gb: float
    needed_gb: float
    precision_path: str


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
    """The fit and the precision path the recipe runs, or a `ConfigError` at `key` listing the instance types
    that fit."""
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
    return FitResult(usable, needed, repo.runsAs.path)


def pick_container(repo_name: str, repo: HuggingFaceRepo, lmi: LmiFile, key: str) -> Container:
    """The first container (in the data's order of preference) whose bundled vLLM meets the checkpoint's
    minimum, or a `ConfigError` at `key` naming both versions."""
    container = lmi.first_meeting(repo.minimumVllm)
    if container is None:
        newest = lmi.newest()
        raise ConfigError(
            key,
            f"{repo_name} needs vLLM >= {repo.minimumVllm} ({repo.vllmSource.split(',')[0]}); the newest "
            f"container in catalog/sagemaker_lmi.yaml, {newest.release} ({newest.name}), bundles vLLM "
            f"{newest.vllmVersion}",
            "a container whose bundled vLLM meets the minimum, added to catalog/sagemaker_lmi.yaml",
        )
    return container
