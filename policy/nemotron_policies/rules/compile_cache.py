"""compile-cache (advisory): every GPU worker of a Dynamo graph or component keeps its compilation caches on a
shared volume, so a new pod or node reuses what the first one compiled (torch.compile, Triton, FlashInfer and
CUDA JIT kernels; a Nemotron 3 torch.compile took up to 2,222 s in vllm-project/vllm#34399).

A component whose containers ask for `nvidia.com/gpu` must declare a compilation cache (v1beta1
`compilationCache`, v1alpha1 a `volumeMounts` entry with `useAsCompilationCache: true`), and its main
container must not point a cache variable (`COMPILE_CACHE_ENVS`, a literal value) outside that cache's mount
path, where it would be lost with the pod (the upstream recipes put Triton's and vLLM's caches in /tmp).
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from ..dynamo import compilation_caches, dynamo_pods
from ..kinds import kubernetes_objects
from ..names import COMPILE_CACHE_ENVS, GPU
from ..values import UNKNOWN, plain, text
from ..workloads import containers, env_entry, main_container, resource_count


def _asks_for_gpus(spec: object) -> object:
    counts = [resource_count(c, section, GPU) for c in containers(spec) for section in ("requests", "limits")]
    if any(n not in (None, UNKNOWN) and n > 0 for n in counts):
        return True
    return UNKNOWN if UNKNOWN in counts else False


def validate_compile_cache(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for obj in kubernetes_objects(args.resource_type, plain(args.props)):
        pods = dynamo_pods(obj)
        if not pods:
            continue
        caches = compilation_caches(obj)
        for pod in pods:
            if pod.spec is UNKNOWN or _asks_for_gpus(pod.spec) is not True:
                continue
            cache = caches.get(pod.component_name or "", None)
            if cache is UNKNOWN:
                continue
            if cache is None:
                report_violation(
                    f"{pod.owner} of {text(obj.name) or obj.kind} asks for {GPU} without a compilation cache: "
                    "every new pod recompiles (torch.compile, Triton, JIT kernels); set compilationCache on a "
                    "ReadWriteMany claim such as the model cache",
                    None,
                )
                continue
            _, mount_path = cache
            main = main_container(pod.spec)
            if mount_path is None or main is None:
                continue
            for name in COMPILE_CACHE_ENVS:
                value = (env_entry(main, name) or {}).get("value")
                if isinstance(value, str) and value != mount_path and not value.startswith(mount_path + "/"):
                    report_violation(
                        f"{pod.owner} of {text(obj.name) or obj.kind} puts {name} at {value}, outside its "
                        f"compilation cache at {mount_path}: that cache is lost with the pod",
                        None,
                    )
