"""What the Kubernetes objects running the ops programs (`ops/`) per serving target share: the target as they
see it (`Endpoint`), labels and metadata, and a hardened pod running one program from the programs ConfigMap.

Pure functions of plain data returning dicts; the smoke Job (`ops_smoke_job`), the benchmark
(`ops_benchmark_job`) and the canary (`ops_canary`) build on them, and the `Operability` component registers
what they return. Pods are non-root, with a read-only root and no service-account token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from serving_stack.plan.ops_programs import PART_OF, PROGRAM_CONFIG_MAP, PROGRAM_MOUNT

NOBODY = 65534
TARGET_LABEL = "nemotron.nvidia.com/target"
TARGET_ID_ANNOTATION = "nemotron.nvidia.com/target-id"


@dataclass(frozen=True)
class Endpoint:
    """One planned target, as the ops objects need it (all from the plan / outputs contract)."""

    target_id: str  # catalog id, e.g. vllm/agg-h200-dspark
    dgd_name: str  # also the prefix of the frontend Service, <dgd>-frontend
    served_model_name: str
    base_url: str  # OpenAI base URL with /v1 (the contract's `url`)
    gpus: int

    @property
    def frontend_root(self) -> str:
        return self.base_url.removesuffix("/v1")


def target_labels(app: str, endpoint: Endpoint) -> dict[str, str]:
    return {"app.kubernetes.io/name": app, TARGET_LABEL: endpoint.dgd_name, **PART_OF}


def object_metadata(name: str, namespace: str, labels: dict[str, str], endpoint: Endpoint) -> dict[str, Any]:
    if len(name) > 52:  # a CronJob's Jobs append 11 characters to a 63-character limit
        raise ValueError(f"{name!r} is longer than 52 characters")
    return {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "annotations": {TARGET_ID_ANNOTATION: endpoint.target_id},
    }


def template_metadata(labels: dict[str, str], annotations: Mapping[str, str]) -> dict[str, Any]:
    return {"labels": labels, **({"annotations": dict(annotations)} if annotations else {})}


def container_security(user: int) -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": user,
        "runAsGroup": user,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def ops_pod(containers: list[dict[str, Any]], volumes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "terminationGracePeriodSeconds": 10,
        "containers": containers,
        "volumes": [{"name": "programs", "configMap": {"name": PROGRAM_CONFIG_MAP}}, *volumes],
        **extra,
    }


def python_container(
    name: str, program: str, args: list[str], resources: dict[str, Any], image: str, user: int
) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "command": ["python3", f"{PROGRAM_MOUNT}/{program}"],
        "args": args,
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}, {"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": resources,
        "securityContext": container_security(user),
        "volumeMounts": [{"name": "programs", "mountPath": PROGRAM_MOUNT, "readOnly": True}],
    }
