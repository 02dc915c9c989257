"""The ReadWriteMany model cache every worker mounts: its storage on a cluster the stack creates (EFS with an
`efs-ap` StorageClass, or FSx for Lustre created beside the cluster with a static PersistentVolume: dynamic
provisioning would add 5-15 minutes to the critical path), the claim and the download Jobs that fill it before
serving starts, and the prewarm DaemonSets (`prewarm/prewarm.py`). Only what holds data is protected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.iam import assume_role_policy
from serving_stack.names import (
    PAUSE_IMAGE,
    PREPULL_APP,
    PREWARM_APP,
    PREWARM_MODELS_ENV,
    PREWARM_POOL_LABEL,
    PREWARM_PRIORITY_CLASS_SUFFIX,
    PREWARM_PROGRAM_CONFIG_MAP,
    TypeTokens,
)
from serving_stack.plan.model_cache import (
    PROGRAM_MOUNT,
    PROGRAM_VOLUME,
    STATE_DIR,
    STATE_VOLUME,
    PrewarmPool,
    StoragePlan,
    state_volume,
)
from serving_stack.plan.operability import (
    CHECKOV_SKIP_ANNOTATION,
    CHOWN_ONLY,
    NOBODY,
    SKIP_AWAIT_ANNOTATION,
    container_security,
)
from serving_stack.plan.serving import CONFIG_CHECKSUM_ANNOTATION
from serving_stack.plan.stack import ServingPlan


@dataclass(frozen=True)
class ModelCacheArgs:
    plan: ServingPlan  # the rendered claim and download Jobs (the first keeps the resource name `<name>-download`)
    namespace: pulumi.Input[str]  # the serving namespace
    # The token Secret the download Jobs read; None downloads without a token (public checkpoints, no `envFrom`).
    hf_token_secret_name: Optional[pulumi.Input[str]]
    volume_name: Optional[pulumi.Input[str]] = None  # a PersistentVolume to bind to, None for dynamic provisioning


def _role_suffix(job_name: str, first: str) -> str:
    """`` for the first Job (its resource name predates more than one), `-bf16` for `<first>-bf16`."""
    if job_name == first:
        return ""
    return "-" + (job_name.removeprefix(first + "-") if job_name.startswith(first + "-") else job_name)


class ModelCache(pulumi.ComponentResource):
    """The claim + the download Jobs; Pulumi awaits each Job, so what depends on `download_jobs` (workers running
    with `HF_HUB_OFFLINE=1`) starts once the checkpoints are in the cache."""

    claim_name: pulumi.Output[str]
    download_jobs: list[k8s.batch.v1.Job]

    def __init__(self, name: str, args: ModelCacheArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.MODEL_CACHE, name, None, opts)
        plan = args.plan
        spec = dict(plan.model_cache_claim["spec"])
        if args.volume_name is not None:
            spec["volumeName"] = args.volume_name
        # Not protected: protect would block every later change of the claim, while the data either lives
        # in a protected file system outside the namespace or is kept by `retain_on_delete` (with the
        # namespace: deleting a namespace deletes the claims in it).
        pvc = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc",
            metadata={**plan.model_cache_claim["metadata"], "namespace": args.namespace},
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=plan.model_cache.retainOnDelete),
        )
        first = plan.download_jobs[0]["metadata"]["name"]
        self.download_jobs = [
            self._download_job(f"{name}-download" + _role_suffix(job["metadata"]["name"], first), job, args, pvc)
            for job in plan.download_jobs
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
        timeout = f"{int(job_spec['activeDeadlineSeconds']) // 60 + 10}m"
        return k8s.batch.v1.Job(
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
                parent=self, custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout)
            ),
        )


EFS_CSI_POLICY = "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"
LUSTRE_PORTS = [(988, 988), (1018, 1023)]
NFS_PORTS = [(2049, 2049)]


@dataclass(frozen=True)
class ModelCacheStorageArgs:
    storage: StoragePlan  # the file system as planned (backend, size, throughput, protection)
    cluster_name: pulumi.Input[str]  # the EKS cluster (its CSI driver's Pod Identity association)
    vpc_id: pulumi.Input[str]  # the VPC of the file system's security group
    vpc_cidr: str  # who may mount it (NFS / Lustre ports)
    private_subnet_ids_by_az: Mapping[str, pulumi.Input[str]]  # where mount targets go, by zone
    claim_namespace: str  # the namespace of the model-cache claim, which an FSx volume is bound to alone
    tags: Mapping[str, str] = field(default_factory=dict)  # tags on every AWS resource it creates


class ModelCacheStorage(pulumi.ComponentResource):
    """`volume_name`: the PersistentVolume the claim binds to (FSx), None for dynamic provisioning (EFS);
    `csi_driver`: what mounting pods need (their claims depend on it)."""

    volume_name: Optional[pulumi.Output[str]]
    csi_driver: aws.eks.Addon

    def __init__(self, name: str, args: ModelCacheStorageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.MODEL_CACHE_STORAGE, name, None, opts)
        storage, child = args.storage, pulumi.ResourceOptions(parent=self)
        group = self._security_group(name, args)
        identities, after = None, []  # the EFS driver authenticates with Pod Identity; the FSx driver only mounts
        if storage.config.backend == "efs":
            trust = assume_role_policy("pods.eks.amazonaws.com", tag_session=True)
            role = aws.iam.Role(f"{name}-csi-role", assume_role_policy=trust, tags=dict(args.tags), opts=child)
            after = [
                aws.iam.RolePolicyAttachment(
                    f"{name}-csi-policy", role=role.name, policy_arn=EFS_CSI_POLICY, opts=child
                )
            ]
            account = storage.csi_addon.serviceAccount
            identities = [aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=account)]
        self.csi_driver = aws.eks.Addon(
            f"{name}-csi-driver",
            cluster_name=args.cluster_name,
            addon_name=storage.csi_addon.name,
            addon_version=storage.csi_addon.version,
            pod_identity_associations=identities,
            resolve_conflicts_on_create="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )
        self.volume_name = None
        if storage.config.backend == "efs":
            self._efs(name, args, group)
        else:
            self.volume_name = self._fsx(name, args, group)
        self.register_outputs({"volumeName": self.volume_name})

    def _security_group(self, name: str, args: ModelCacheStorageArgs) -> aws.ec2.SecurityGroup:
        """Clients in the VPC reach the file system on its ports; Lustre servers and clients also talk to
        each other on them, so FSx gets the same ports out (to the VPC) and to and from itself. pulumi-aws
        removes AWS's default allow-all egress, so the egress here is all there is."""
        child = pulumi.ResourceOptions(parent=self)
        backend = args.storage.config.backend
        group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"Model cache ({backend}): clients in the VPC",
            tags={**args.tags, "Name": f"model-cache-{backend}"},
            opts=child,
        )
        for low, high in NFS_PORTS if backend == "efs" else LUSTRE_PORTS:
            ports = {"ip_protocol": "tcp", "from_port": low, "to_port": high, "opts": child}
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-from-vpc-{low}", security_group_id=group.id, cidr_ipv4=args.vpc_cidr, **ports
            )
            if backend == "fsx":
                itself = {"security_group_id": group.id, "referenced_security_group_id": group.id, **ports}
                aws.vpc.SecurityGroupIngressRule(f"{name}-from-self-{low}", **itself)
                aws.vpc.SecurityGroupEgressRule(
                    f"{name}-to-vpc-{low}", security_group_id=group.id, cidr_ipv4=args.vpc_cidr, **ports
                )
                aws.vpc.SecurityGroupEgressRule(f"{name}-to-self-{low}", **itself)
        return group

    def _efs(self, name: str, args: ModelCacheStorageArgs, group: aws.ec2.SecurityGroup) -> None:
        """The file system, a mount target per AZ, and the `efs-ap` StorageClass."""
        storage, efs = args.storage, args.storage.config.efs
        file_system = aws.efs.FileSystem(
            f"{name}-efs",
            encrypted=True,
            throughput_mode="elastic",
            performance_mode="generalPurpose",
            tags={**args.tags, "Name": "model-cache"},
            opts=pulumi.ResourceOptions(parent=self, protect=storage.config.protect),
        )
        for zone, subnet_id in args.private_subnet_ids_by_az.items():
            aws.efs.MountTarget(
                f"{name}-efs-{zone}",
                file_system_id=file_system.id,
                subnet_id=subnet_id,
                security_groups=[group.id],
                opts=pulumi.ResourceOptions(parent=self),
            )
        k8s.storage.v1.StorageClass(
            f"{name}-storage-class",
            metadata={"name": storage.storage_class_name},
            provisioner="efs.csi.aws.com",
            parameters={
                "provisioningMode": "efs-ap",
                "fileSystemId": file_system.id,
                "directoryPerms": efs.directoryPerms,
                "basePath": efs.basePath,
            },
            reclaim_policy="Retain" if storage.config.protect else "Delete",
            volume_binding_mode="Immediate",
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _fsx(self, name: str, args: ModelCacheStorageArgs, group: aws.ec2.SecurityGroup) -> pulumi.Output[str]:
        """The file system (encrypted at rest by FSx) and the PersistentVolume bound to the model-cache claim."""
        storage, fsx = args.storage, args.storage.config.fsx
        assert storage.fsx_zone is not None  # the plan resolves it
        file_system = aws.fsx.LustreFileSystem(
            f"{name}-fsx",
            storage_capacity=storage.fsx_capacity_gib,
            subnet_ids=args.private_subnet_ids_by_az[storage.fsx_zone],
            security_group_ids=[group.id],
            deployment_type="PERSISTENT_2",
            per_unit_storage_throughput=fsx.perUnitStorageThroughput,
            file_system_type_version=fsx.fileSystemTypeVersion,
            data_compression_type=fsx.dataCompressionType,
            # A model cache is refilled by the download Job: no backup to take or pay for on deletion.
            skip_final_backup=True,
            tags={**args.tags, "Name": "model-cache"},
            opts=pulumi.ResourceOptions(parent=self, protect=storage.config.protect),
        )
        volume = k8s.core.v1.PersistentVolume(
            f"{name}-volume",
            metadata={"name": f"{storage.storage_class_name}-model-cache"},
            spec={
                "capacity": {"storage": f"{storage.fsx_capacity_gib}Gi"},
                "volumeMode": "Filesystem",
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": storage.storage_class_name,
                "mountOptions": ["flock"],
                "claimRef": {"namespace": args.claim_namespace, "name": storage.claim_name},
                "csi": {
                    "driver": "fsx.csi.aws.com",
                    "volumeHandle": file_system.id,
                    "volumeAttributes": {"dnsname": file_system.dns_name, "mountname": file_system.mount_name},
                },
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        volume_name: pulumi.Output[str] = volume.metadata.name
        return volume_name


@dataclass(frozen=True)
class ModelPrewarmArgs:
    plan: ServingPlan  # the DaemonSets (`prewarm_pools`), their settings and program, the node-local state dir
    namespace: pulumi.Input[str]  # the serving namespace
    claim_name: pulumi.Input[str]  # the model-cache claim the DaemonSets read
    # What the DaemonSets wait for (the download Jobs: a prewarm pod is Ready once it has read complete
    # checkpoints); the program's ConfigMap does not, as the gated workers mount it from their start.
    after: Sequence[pulumi.Resource] = ()


# A container that runs one short command or holds the pod (the pre-pull, the state-dir hand-over).
SMALL = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}


class ModelPrewarm(pulumi.ComponentResource):
    """The program's ConfigMap, a low PriorityClass, and a DaemonSet per pool, running as nobody (a CAP_CHOWN-only
    init container hands it the node-local state dir). Small memory requests never block scheduling; the limit
    holds the checkpoints, since page cache counts against it. With `prePullImages`, a second DaemonSet per pool
    pulls the workers' images from each node's registration."""

    def __init__(self, name: str, args: ModelPrewarmArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.MODEL_PREWARM, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        program = k8s.core.v1.ConfigMap(
            f"{name}-program",
            metadata={"name": PREWARM_PROGRAM_CONFIG_MAP, "namespace": args.namespace},
            data={"prewarm.py": args.plan.prewarm_program},
            opts=child,
        )
        priority = k8s.scheduling.v1.PriorityClass(
            f"{name}-priority",
            metadata={"name": pulumi.Output.concat(args.namespace, PREWARM_PRIORITY_CLASS_SUFFIX)},
            value=-100,
            preemption_policy="Never",
            global_default=False,
            description="Below serving workloads: prewarming never preempts or outranks a worker.",
            opts=child,
        )
        self.daemon_sets = [self._daemon_set(name, pool, program, priority, args) for pool in args.plan.prewarm_pools]
        # Created with the namespace, not after the download: the pull starts as each node registers.
        self.pre_pulls = [
            self._pre_pull(name, pool, priority, args)
            for pool in args.plan.prewarm_pools
            if args.plan.model_cache.prewarm.prePullImages
        ]
        self.register_outputs({"daemonSets": [d.metadata.name for d in self.daemon_sets + self.pre_pulls]})

    def _on_pool(
        self,
        resource_name: str,
        app: str,
        pool: PrewarmPool,
        priority: k8s.scheduling.v1.PriorityClass,
        args: ModelPrewarmArgs,
        pod: dict[str, Any],
        annotations: Optional[dict[str, str]] = None,
        template_annotations: Optional[dict[str, str]] = None,
        depends_on: Sequence[pulumi.Resource] = (),
    ) -> k8s.apps.v1.DaemonSet:
        """A DaemonSet `<app>-<pool>` on the pool's nodes (its placement and taints), below serving priority, with
        no service account token and the runtime's seccomp profile; `pod` adds the pod's own fields."""
        labels = {"app.kubernetes.io/name": app, PREWARM_POOL_LABEL: pool.name}
        metadata = {"name": f"{app}-{pool.name}", "namespace": args.namespace, "labels": labels}
        template = {"labels": labels, **({"annotations": template_annotations} if template_annotations else {})}
        return k8s.apps.v1.DaemonSet(
            resource_name,
            metadata={**metadata, **({"annotations": annotations} if annotations else {})},
            spec={
                "selector": {"matchLabels": labels},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
                "template": {
                    "metadata": template,
                    "spec": {
                        "priorityClassName": priority.metadata.name,
                        "affinity": {"nodeAffinity": pool.node_affinity},
                        "tolerations": pool.tolerations,
                        **pod,
                        "automountServiceAccountToken": False,
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    },
                },
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )

    def _pre_pull(
        self, name: str, pool: PrewarmPool, priority: k8s.scheduling.v1.PriorityClass, args: ModelPrewarmArgs
    ) -> k8s.apps.v1.DaemonSet:
        """Pulls every worker image of the pool onto each of its nodes: an init container per image runs `true`
        (in every image with a shell; the Dynamo runtime images are Ubuntu-based), then a pause container holds
        the pod so the kubelet keeps the images in use; no GPU requested. Not awaited: nothing waits for it, and
        `up` must neither hold for a pull of many GB nor time out on a node group still being created."""
        locked = container_security(NOBODY)
        pulls = [
            {"name": f"pull-{i}", "image": image, "command": ["true"], "resources": SMALL, "securityContext": locked}
            for i, image in enumerate(pool.images)
        ]
        pause = {"name": "pause", "image": PAUSE_IMAGE, "resources": SMALL, "securityContext": locked}
        pod = {
            **({"imagePullSecrets": pool.pull_secrets} if pool.pull_secrets else {}),
            "terminationGracePeriodSeconds": 1,
            "initContainers": pulls,
            "containers": [pause],
        }
        annotations = {
            SKIP_AWAIT_ANNOTATION: "true",
            # pause has no shell or endpoint to probe: the pod is Ready once its pulls have run.
            CHECKOV_SKIP_ANNOTATION: "CKV_K8S_9=a pause container holding pulled images serves nothing",
        }
        return self._on_pool(f"{name}-{pool.name}-pull", PREPULL_APP, pool, priority, args, pod, annotations)

    def _daemon_set(
        self,
        name: str,
        pool: PrewarmPool,
        program: k8s.core.v1.ConfigMap,
        priority: k8s.scheduling.v1.PriorityClass,
        args: ModelPrewarmArgs,
    ) -> k8s.apps.v1.DaemonSet:
        settings = args.plan.model_cache.prewarm
        command = ["python3", f"{PROGRAM_MOUNT}/prewarm.py"]
        container = {
            "name": "prewarm",
            "image": settings.image,
            "command": [*command, "--watch"],
            "env": [
                {"name": PREWARM_MODELS_ENV, "value": ",".join(pool.checkpoints)},
                {"name": "PREWARM_CACHE_ROOT", "value": "/model-cache"},
                {"name": "PREWARM_STATE_DIR", "value": STATE_DIR},
                {"name": "PREWARM_THREADS", "value": str(settings.threads)},
                {"name": "PREWARM_IO_PRIORITY", "value": "best-effort"},
            ],
            "resources": {
                "requests": {"cpu": "250m", "memory": "256Mi"},
                "limits": {"cpu": settings.cpuLimit, "memory": pool.memory_limit},
            },
            "readinessProbe": {
                "exec": {"command": [*command[:2], "--check-ready", "--state-dir", STATE_DIR]},
                "periodSeconds": 15,
            },
            "securityContext": container_security(NOBODY),
            "volumeMounts": [
                {"name": "model-cache", "mountPath": "/model-cache", "readOnly": True},
                {"name": STATE_VOLUME, "mountPath": STATE_DIR},
                {"name": PROGRAM_VOLUME, "mountPath": PROGRAM_MOUNT, "readOnly": True},
            ],
        }
        take_state_dir = {
            "name": "own-state-dir",
            "image": settings.image,
            "command": ["chown", f"{NOBODY}:{NOBODY}", STATE_DIR],
            "resources": SMALL,
            "securityContext": CHOWN_ONLY,
            "volumeMounts": [{"name": STATE_VOLUME, "mountPath": STATE_DIR}],
        }
        pod = {
            "terminationGracePeriodSeconds": 5,
            "initContainers": [take_state_dir],
            "containers": [container],
            "volumes": [
                {"name": "model-cache", "persistentVolumeClaim": {"claimName": args.claim_name, "readOnly": True}},
                state_volume(args.plan.prewarm_host_dir),
                {"name": PROGRAM_VOLUME, "configMap": {"name": program.metadata.name}},
            ],
        }
        # The program's ConfigMap is replaced under the same name when it changes; only a changed pod template
        # makes the DaemonSet roll its pods onto the new program.
        digest = {CONFIG_CHECKSUM_ANNOTATION: hashlib.sha256(args.plan.prewarm_program.encode()).hexdigest()}
        return self._on_pool(
            f"{name}-{pool.name}", PREWARM_APP, pool, priority, args, pod, None, digest, depends_on=args.after
        )
