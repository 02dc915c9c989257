"""The ReadWriteMany model cache every worker mounts, and the Job that fills it before serving starts."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from serving_stack.names import TypeTokens


@dataclass(frozen=True)
class ModelCacheArgs:
    namespace: pulumi.Input[str]
    hf_token_secret_name: pulumi.Input[str]
    pvc: dict[str, Any]
    download_jobs: tuple[dict[str, Any], ...]  # the first keeps the resource name `<name>-download`
    retain_on_delete: bool


def _role_suffix(job_name: str, first: str) -> str:
    """`` for the first Job (its resource name predates more than one), `-bf16` for `<first>-bf16`."""
    if job_name == first:
        return ""
    return "-" + (job_name.removeprefix(first + "-") if job_name.startswith(first + "-") else job_name)


class ModelCache(pulumi.ComponentResource):
    """PVC `shared-model-cache` + the download Jobs (one per upstream checkpoint set).

    Pulumi waits for each Job to complete, so whatever depends on `download_jobs` (the serving targets,
    whose pods run with `HF_HUB_OFFLINE=1`) starts only once the checkpoints are in the cache.
    """

    claim_name: pulumi.Output[str]
    download_jobs: list[k8s.batch.v1.Job]

    def __init__(self, name: str, args: ModelCacheArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.MODEL_CACHE, name, None, opts)
        pvc = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc",
            metadata={**args.pvc["metadata"], "namespace": args.namespace},
            spec=args.pvc["spec"],
            # Protected too: the CLI's policy analyzer sees `protect`, not `retainOnDelete`.
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_on_delete, protect=args.retain_on_delete),
        )
        first = args.download_jobs[0]["metadata"]["name"]
        self.download_jobs = [
            self._download_job(f"{name}-download" + _role_suffix(job["metadata"]["name"], first), job, args, pvc)
            for job in args.download_jobs
        ]
        self.claim_name = pvc.metadata.name
        self.register_outputs({"claimName": self.claim_name,
                               "downloadJobs": [job.metadata.name for job in self.download_jobs]})

    def _download_job(self, resource_name: str, job: dict[str, Any], args: ModelCacheArgs,
                      pvc: k8s.core.v1.PersistentVolumeClaim) -> k8s.batch.v1.Job:
        job_spec = job["spec"]
        pod_spec = job_spec["template"]["spec"]
        (container,) = pod_spec["containers"]
        container = {**container, "envFrom": [{"secretRef": {"name": args.hf_token_secret_name}}]}
        volumes = [
            {**v, "persistentVolumeClaim": {"claimName": pvc.metadata.name}} if "persistentVolumeClaim" in v else v
            for v in pod_spec["volumes"]
        ]
        deadline = int(job_spec["activeDeadlineSeconds"])
        download: k8s.batch.v1.Job = k8s.batch.v1.Job(
            resource_name,
            metadata={**job["metadata"], "namespace": args.namespace},
            spec={**job_spec, "template": {**job_spec["template"], "spec": {**pod_spec, "containers": [container], "volumes": volumes}}},
            opts=pulumi.ResourceOptions(
                parent=self,
                custom_timeouts=pulumi.CustomTimeouts(create=f"{deadline // 60 + 10}m", update=f"{deadline // 60 + 10}m"),
            ),
        )
        return download
