"""The policies of the pack, their enforcement levels and config schemas.

`policy/__main__.py` hands `POLICIES` to `PolicyPack` (the engine runs them); `offline.evaluate` runs the
very same objects on a mock render. The pack's version lives in `PulumiPolicy.yaml`, as the CLI expects.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pulumi_policy import EnforcementLevel, Policy, ResourceValidationPolicy, StackValidationPolicy

from .rules import (
    admin_ports,
    compile_cache,
    data_protection,
    fabric,
    gateway_network,
    gpu,
    iam_lint,
    images,
    network,
    network_types,
    pod_security_standards,
    prewarm,
    privilege,
    requests,
    sagemaker_network,
    secrets,
)

PACK_NAME = "nemotron-lightning-policies"
PACK_FILE = Path(__file__).resolve().parent.parent / "PulumiPolicy.yaml"
PACK_VERSION = str(yaml.safe_load(PACK_FILE.read_text())["version"])
MANDATORY, ADVISORY = EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY

POLICIES: list[Policy] = [
    StackValidationPolicy(
        name="fabric-requests",
        description="Disaggregated prefill/decode workers (by their disaggregation mode or NIXL KV transfer) request "
        "their nodes' RDMA fabric (request = limit) or run on nodes that state it out of band, use the "
        "matching NIXL backend (EFA: LIBFABRIC, InfiniBand: UCX) and share speculative-decoding settings.",
        validate=fabric.validate_fabric_requests,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="prewarm-daemonsets",
        description="Every node pool running model-cache workers (Dynamo workers, any GPU pod mounting the cache) has "
        "a prewarm DaemonSet on the same nodes that mounts the cache read-only and warms every checkpoint the "
        "workers load (env PREWARM_MODELS), unless the stack is in unwarmedStacks; prewarm containers set cpu "
        "and memory limits.",
        validate=prewarm.validate_prewarm_daemonsets,
        enforcement_level=MANDATORY,
        config_schema=prewarm.SCHEMA,
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
        description="Every image (containers of every kind, image keys of custom resources, image volumes, Helm "
        "values and value files, SageMaker models and inference components) is pinned "
        "by a version tag or a digest, names its registry and comes from an allowed registry.",
        validate=images.validate_image_pinning,
        enforcement_level=MANDATORY,
        config_schema=images.SCHEMA,
    ),
    ResourceValidationPolicy(
        name="secret-handling",
        description="Credentials (the Hugging Face token included) reach pods only through Secret references, never "
        "as literals in env, args, ConfigMaps, Helm values or resource inputs (by name or by value shape).",
        validate=secrets.validate_secret_handling,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="data-protection",
        description="The model cache is protected or retained on delete in protected stacks, storage is encrypted (S3, "
        "EFS, EBS, EKS Secrets, SageMaker KMS where AWS allows it, data capture with KMS), buckets block "
        "public access, KMS keys rotate, and launch templates require IMDSv2.",
        validate=data_protection.validate_data_protection,
        enforcement_level=MANDATORY,
        config_schema=data_protection.SCHEMA,
    ),
    ResourceValidationPolicy(
        name="least-privilege",
        description="No privileged pods, host processes, hostPath volumes outside the allowed paths or blanket RBAC "
        "outside the stack's device-plugin component, no administrator, power-user or full-access managed policies "
        "or system:masters access entries, no wildcard, NotAction or NotResource grants, and no trust or "
        'resource policy open to principal "*" without a condition on who calls.',
        validate=privilege.validate_least_privilege,
        enforcement_level=MANDATORY,
        config_schema=privilege.SCHEMA,
    ),
    ResourceValidationPolicy(
        name="iam-policy-lint",
        description="IAM policy documents pass Parliament (duo-labs/parliament): no unknown actions or condition "
        "operators, no action on a resource it cannot act on, no malformed statement.",
        validate=iam_lint.validate_iam_policy_lint,
        enforcement_level=MANDATORY,
        config_schema=iam_lint.SCHEMA,
    ),
    ResourceValidationPolicy(
        name="network-policy-peers",
        description="Every ingress and egress rule of a NetworkPolicy names its peers: a rule without `from` "
        "(`to`) admits every source (destination) on its ports.",
        validate=network.validate_network_policy_peers,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="pod-security-standards",
        description="Every pod meets the Kubernetes Pod Security Standard (baseline or restricted) its namespace "
        "enforces (defaultLevel for namespaces the stack does not label), checked offline as the PodSecurity "
        "admission controller checks it; only the stack's serving namespace may enforce privileged.",
        validate=pod_security_standards.validate_pod_security_standards,
        enforcement_level=MANDATORY,
        config_schema=pod_security_standards.SCHEMA,
    ),
    ResourceValidationPolicy(
        name="network-policy-types",
        description="A NetworkPolicy's policyTypes list every direction it has rules for (the rules of a "
        "direction left out are ignored and that direction stays open).",
        validate=network_types.validate_network_policy_types,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="gateway-network-policy",
        description="The gateway's pods are selected by a NetworkPolicy of the stack isolating Ingress and "
        "Egress, and no NetworkPolicy selecting them admits every source.",
        validate=gateway_network.validate_gateway_network_policy,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="admin-ports-closed",
        description="No security group opens an administration or data-store port (SSH, RDP, the Kubernetes API, "
        "etcd, the kubelet, databases: AWS Security Hub EC2.19, CIS AWS Foundations 5.2-5.4) to 0.0.0.0/0 or "
        "::/0, in any form of ingress rule.",
        validate=admin_ports.validate_admin_ports_closed,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="sagemaker-network",
        description="SageMaker models, notebook instances and domains in the stack's VPC run in no public subnet "
        "with a security group open to the Internet.",
        validate=sagemaker_network.validate_sagemaker_network,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="compile-cache",
        description="GPU workers of Dynamo graphs keep their compilation caches (torch.compile, Triton, JIT kernels) "
        "on a shared volume: a compilation cache declared, and no cache variable of the main container outside it.",
        validate=compile_cache.validate_compile_cache,
        enforcement_level=ADVISORY,
    ),
    ResourceValidationPolicy(
        name="resource-requests",
        description="Workload containers declare resource requests, so they are not scheduled BestEffort.",
        validate=requests.validate_resource_requests,
        enforcement_level=ADVISORY,
    ),
]
