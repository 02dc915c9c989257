"""The ReadWriteMany model cache every worker mounts, and the Job that fills it before serving starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from serving_stack.names import TypeTokens


@dataclass(frozen=True)
class ModelCacheArgs:
    """`hf_token_secret_name`: None downloads without a token (public checkpoints), so the Job's `envFrom`
    of the token Secret goes; `volume_name`: a PersistentVolume the claim binds to (a file system the stack
    created), None for dynamic provisioning by the claim's StorageClass."""

    namespace: pulumi.Input[str]  # the serving namespace
    hf_token_secret_name: Optional[pulumi.Input[str]]  # the token Secret the download Jobs read, None without
    pvc: dict[str, Any]  # the rendered claim
    download_jobs: tuple[dict[str, Any], ...]  # the first keeps the resource name `<name>-download`
    retain_on_delete: bool  # `pulumi destroy` forgets the claim instead of deleting it
    volume_name: Optional[pulumi.Input[str]] = None  # a PersistentVolume to bind to, None for dynamic provisioning


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
        spec = dict(args.pvc["spec"])
        if args.volume_name is not None:
            spec["volumeName"] = args.volume_name
        # Not protected: protect would block every later change of the claim, while the data either lives
        # in a protected file system outside the namespace or is kept by `retain_on_delete` (with the
        # namespace: deleting a namespace deletes the claims in it).
        pvc = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc",
            metadata={**args.pvc["metadata"], "namespace": args.namespace},
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_on_delete),
        )
        first = args.download_jobs[0]["metadata"]["name"]
        self.download_jobs = [
            self._download_job(f"{name}-download" + _role_suffix(job["metadata"]["name"], first), job, args, pvc)
            for job in args.download_jobs
        ]
        self.claim_name = pvc.metadata.name
        self.register_outputs(
            {"claimName": self.claim_name, "downloadJobs": [job.metadata.name for job in self.download_jobs]}
        )

    def _download_job(
        self, resource_name: str, job: dict[str, Any], args: ModelCacheArgs, pvc: k8s.core.v1.PersistentVolumeClaim
    ) -> k8s.batch.v1.Job:
        job_spec = job["spec"]
        pod_spec = job_spec["template"]["spec"]
        (container,) = pod_spec["containers"]
        if args.hf_token_secret_name is None:
            container = {key: value for key, value in container.items() if key != "envFrom"}
        else:
            container = {**container, "envFrom": [{"secretRef": {"name": args.hf_token_secret_name}}]}
        volumes = [
            {**v, "persistentVolumeClaim": {"claimName": pvc.metadata.name}} if "persistentVolumeClaim" in v else v
            for v in pod_spec["volumes"]
        ]
        deadline = int(job_spec["activeDeadlineSeconds"])
        download: k8s.batch.v1.Job = k8s.batch.v1.Job(
            resource_name,
            metadata={**job["metadata"], "namespace": args.namespace},
            spec={
                **job_spec,
                "template": {
                    **job_spec["template"],
                    "spec": {**pod_spec, "containers": [container], "volumes": volumes},
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                custom_timeouts=pulumi.CustomTimeouts(
                    create=f"{deadline // 60 + 10}m", update=f"{deadline // 60 + 10}m"
                ),
            ),
        )
        return download
