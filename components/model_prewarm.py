"""Prewarm DaemonSets: one per GPU node pool that hosts model-cache workers (see `prewarm/prewarm.py`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from serving_stack.names import (
    PREWARM_APP,
    PREWARM_MODELS_ENV,
    PREWARM_POOL_LABEL,
    PREWARM_PRIORITY_CLASS_SUFFIX,
    TypeTokens,
)
from serving_stack.plan.manifests import CONFIG_CHECKSUM_ANNOTATION
from serving_stack.plan.prewarm import (
    PROGRAM_CONFIG_MAP,
    PROGRAM_MOUNT,
    PROGRAM_VOLUME,
    STATE_DIR,
    STATE_VOLUME,
    PrewarmPool,
    PrewarmSettings,
    program_volume,
    state_volume,
)

NOBODY = 65534


@dataclass(frozen=True)
class ModelPrewarmArgs:
    namespace: pulumi.Input[str]  # the serving namespace
    claim_name: pulumi.Input[str]  # the model-cache claim the DaemonSets read
    program_source: str  # prewarm/prewarm.py, shipped in a ConfigMap
    pools: Sequence[PrewarmPool]  # one DaemonSet per GPU pool, with the checkpoints its targets load
    settings: PrewarmSettings  # image, resources and read settings shared by the DaemonSets


class ModelPrewarm(pulumi.ComponentResource):
    """The program's ConfigMap, a low PriorityClass, and a DaemonSet per pool.

    The pods run as nobody with every capability dropped and the model cache mounted read-only; a
    root init container with only CAP_CHOWN hands the node-local state dir (a hostPath, where the
    readiness file lives) to that user. Memory *requests* are small so the DaemonSet never blocks
    scheduling; the *limit* must hold the checkpoints, since page cache counts against it.
    """

    def __init__(self, name: str, args: ModelPrewarmArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.MODEL_PREWARM, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        program = k8s.core.v1.ConfigMap(
            f"{name}-program",
            metadata={"name": PROGRAM_CONFIG_MAP, "namespace": args.namespace},
            data={"prewarm.py": args.program_source},
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
        self.daemon_sets = [self._daemon_set(name, pool, program, priority, args) for pool in args.pools]
        self.register_outputs({"daemonSets": [d.metadata.name for d in self.daemon_sets]})

    def _daemon_set(
        self,
        name: str,
        pool: PrewarmPool,
        program: k8s.core.v1.ConfigMap,
        priority: k8s.scheduling.v1.PriorityClass,
        args: ModelPrewarmArgs,
    ) -> k8s.apps.v1.DaemonSet:
        labels = {"app.kubernetes.io/name": PREWARM_APP, PREWARM_POOL_LABEL: pool.name}
        settings = args.settings
        container = {
            "name": "prewarm",
            "image": settings.image,
            "command": ["python3", f"{PROGRAM_MOUNT}/prewarm.py", "--watch"],
            "env": [
                {"name": PREWARM_MODELS_ENV, "value": ",".join(pool.checkpoints)},
                {"name": "PREWARM_CACHE_ROOT", "value": "/model-cache"},
                {"name": "PREWARM_STATE_DIR", "value": STATE_DIR},
                {"name": "PREWARM_THREADS", "value": str(settings.threads)},
                {"name": "PREWARM_IO_PRIORITY", "value": "best-effort"},
            ],
            "resources": {
                "requests": {"cpu": "250m", "memory": "256Mi"},
                "limits": {"cpu": settings.cpu_limit, "memory": settings.memory_limit},
            },
            "readinessProbe": {
                "exec": {
                    "command": ["python3", f"{PROGRAM_MOUNT}/prewarm.py", "--check-ready", "--state-dir", STATE_DIR]
                },
                "periodSeconds": 15,
            },
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": NOBODY,
                "runAsGroup": NOBODY,
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            },
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
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
            "securityContext": {
                "runAsUser": 0,
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]},
            },
            "volumeMounts": [{"name": STATE_VOLUME, "mountPath": STATE_DIR}],
        }
        return k8s.apps.v1.DaemonSet(
            f"{name}-{pool.name}",
            metadata={"name": f"model-prewarm-{pool.name}", "namespace": args.namespace, "labels": labels},
            spec={
                "selector": {"matchLabels": labels},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
                "template": {
                    # The program's ConfigMap is replaced under the same name when it changes; only a changed
                    # pod template makes the DaemonSet roll its pods onto the new program.
                    "metadata": {
                        "labels": labels,
                        "annotations": {
                            CONFIG_CHECKSUM_ANNOTATION: hashlib.sha256(args.program_source.encode()).hexdigest()
                        },
                    },
                    "spec": {
                        "priorityClassName": priority.metadata.name,
                        "affinity": {"nodeAffinity": pool.node_affinity},
                        "tolerations": pool.tolerations,
                        "automountServiceAccountToken": False,
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "terminationGracePeriodSeconds": 5,
                        "initContainers": [take_state_dir],
                        "containers": [container],
                        "volumes": [
                            {
                                "name": "model-cache",
                                "persistentVolumeClaim": {"claimName": args.claim_name, "readOnly": True},
                            },
                            state_volume(settings.host_state_dir),
                            {**program_volume(), "configMap": {"name": program.metadata.name}},
                        ],
                    },
                },
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
