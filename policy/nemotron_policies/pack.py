"""The policies of the pack, their enforcement levels and config schemas.

`policy/__main__.py` hands `POLICIES` to `PolicyPack` (the engine runs them); `offline.evaluate` runs the
very same objects on a mock render. The pack's version lives in `PulumiPolicy.yaml`, as the CLI expects.
"""
from __future__ import annotations

from pathlib import Path

import yaml
from pulumi_policy import EnforcementLevel, Policy, ResourceValidationPolicy, StackValidationPolicy

from .rules import data_protection, fabric, gpu, images, prewarm, privilege, requests, secrets

PACK_NAME = "nemotron-lightning-policies"
PACK_VERSION = str(yaml.safe_load((Path(__file__).resolve().parent.parent / "PulumiPolicy.yaml").read_text())["version"])
MANDATORY, ADVISORY = EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY

POLICIES: list[Policy] = [
    StackValidationPolicy(
        name="fabric-requests",
        description="Disaggregated prefill/decode workers request their nodes' RDMA fabric (request = limit), use the "
                    "matching NIXL backend (EFA: LIBFABRIC, InfiniBand: UCX) and share speculative-decoding settings.",
        validate=fabric.validate_fabric_requests,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="prewarm-daemonsets",
        description="Every node pool running model-cache workers has a prewarm DaemonSet on the same nodes that mounts "
                    "the cache read-only and warms every checkpoint the workers load (env PREWARM_REPOS/PREWARM_MODELS).",
        validate=prewarm.validate_prewarm_daemonsets,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="gpu-resources",
        description="Containers that ask for nvidia.com/gpu set request = limit and run only in pods pinned to GPU "
                    "nodes (node affinity on nvidia.com/gpu.product or nemotron.nvidia.com/pool, GPU toleration).",
        validate=gpu.validate_gpu_resources,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="image-pinning",
        description="Every image is pinned by a version tag or a digest and comes from an allowed registry.",
        validate=images.validate_image_pinning,
        enforcement_level=MANDATORY,
        config_schema=images.SCHEMA,
    ),
    ResourceValidationPolicy(
        name="secret-handling",
        description="Credentials (the Hugging Face token included) reach pods only through Secret references, never "
                    "as literals in env, args, ConfigMaps or resource inputs.",
        validate=secrets.validate_secret_handling,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="data-protection",
        description="The model cache is protected or retained on delete in protected stacks, SageMaker endpoint "
                    "storage and data capture are KMS-encrypted, and launch templates require IMDSv2.",
        validate=data_protection.validate_data_protection,
        enforcement_level=MANDATORY,
        config_schema=data_protection.SCHEMA,
    ),
    ResourceValidationPolicy(
        name="least-privilege",
        description="No privileged pods outside allow-listed device plugins, no *FullAccess/AdministratorAccess "
                    "managed policies and no Action \"*\" in IAM policies.",
        validate=privilege.validate_least_privilege,
        enforcement_level=MANDATORY,
        config_schema=privilege.SCHEMA,
    ),
    ResourceValidationPolicy(
        name="resource-requests",
        description="Workload containers declare resource requests, so they are not scheduled BestEffort.",
        validate=requests.validate_resource_requests,
        enforcement_level=ADVISORY,
    ),
]
