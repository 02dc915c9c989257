"""Names several layers share, defined once: node labels and taints, Kubernetes object names, component type
tokens. The policy pack deploys alone and keeps copies (`tests/test_shared_names.py` holds them equal)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Literal

# Node labels of GPU pools (the placement and the policy pack select on them).
LABEL_PREFIX = "nemotron.nvidia.com"
POOL_LABEL = f"{LABEL_PREFIX}/pool"
FABRIC_LABEL = f"{LABEL_PREFIX}/fabric"
EFA_PER_GPU_LABEL = f"{LABEL_PREFIX}/efa-per-gpu"
GPU_LABEL = f"{LABEL_PREFIX}/gpu"
ROLE_LABEL = f"{LABEL_PREFIX}/role"
PREWARM_POOL_LABEL = f"{LABEL_PREFIX}/prewarm-pool"
AVAILABILITY_ZONE_TAG = f"{LABEL_PREFIX}/availability-zone"
# A node label: the pool's KV-transfer fabric is provided outside Kubernetes resources (GB200 multi-node
# NVLink through IMEX, host RDMA); its value names the mechanism.
FABRIC_OUT_OF_BAND_LABEL = f"{LABEL_PREFIX}/fabric-out-of-band"
PART_OF_LABEL = "app.kubernetes.io/part-of"
PROJECT = "nemotron-lightning"

# NVIDIA's names (device plugin and GPU Feature Discovery).
GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_TAINT = MappingProxyType({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"})
EFA_RESOURCE = "vpc.amazonaws.com/efa"
INFINIBAND_RESOURCE = "rdma/ib"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# A Hugging Face repo id (`org/name`): stack input and the catalog's download Jobs are checked against it.
HF_REPO = r"^[A-Za-z0-9][\w.-]*/[\w.-]+$"

# How a GPU pool's instances are bought: On-Demand, Spot, an On-Demand Capacity Reservation (`odcr`) the
# pool targets, or a Capacity Block for ML. The config and the instance facts both speak of it.
CapacityType = Literal["on-demand", "spot", "odcr", "capacity-block"]

# Upstream recipe names the stack keeps (the recipes' workers mount the claim, the download Job reads
# the token Secret through `envFrom`).
MODEL_CACHE_CLAIM = "shared-model-cache"
HF_TOKEN_SECRET = "hf-token-secret"
HF_TOKEN_KEY = "HF_TOKEN"
WORKER_COMPONENT_TYPES = ("worker", "prefill", "decode")

# Prewarm objects.
PREWARM_PROGRAM_CONFIG_MAP = "model-prewarm-program"
PREWARM_APP = "model-prewarm"
# Image pre-pull DaemonSets (one per prewarm placement) and their main container: registry.k8s.io's pause 3.10,
# pinned by digest (the manifest list registry.k8s.io serves for the tag, read 2026-12-02).
PREPULL_APP = "image-prepull"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
# PriorityClasses are cluster-scoped: each stack names its own `<namespace>-model-prewarm`, so two stacks on
# one cluster never collide and one stack's `destroy` cannot delete the other's.
PREWARM_PRIORITY_CLASS_SUFFIX = "-model-prewarm"
PREWARM_MODELS_ENV = "PREWARM_MODELS"  # the checkpoints a prewarm DaemonSet reads (the policy pack checks it)


class TypeTokens:
    """`nemotron:<area>:<Name>` of every component. `area` says what the component builds: `aws` for AWS
    resources, `kubernetes` for plain Kubernetes objects, `dynamo` for Dynamo custom resources."""

    NETWORK = "nemotron:aws:Network"
    EKS_CLUSTER = "nemotron:aws:EksCluster"
    GPU_NODE_POOL = "nemotron:aws:GpuNodePool"
    MODEL_CACHE_STORAGE = "nemotron:aws:ModelCacheStorage"
    SAGEMAKER_ENDPOINT = "nemotron:aws:SageMakerEndpoint"
    DEVICE_PLUGINS = "nemotron:kubernetes:DevicePlugins"
    DRA_DRIVER = "nemotron:kubernetes:NvidiaDraDriver"
    SERVING_NAMESPACE = "nemotron:kubernetes:ServingNamespace"
    MODEL_CACHE = "nemotron:kubernetes:ModelCache"
    MODEL_PREWARM = "nemotron:kubernetes:ModelPrewarm"
    OPERABILITY = "nemotron:kubernetes:Operability"
    DYNAMO_PLATFORM = "nemotron:dynamo:DynamoPlatform"
    SERVING_TARGET = "nemotron:dynamo:ServingTarget"
    SERVING_AUTOSCALER = "nemotron:kubernetes:ServingAutoscaler"
    GATEWAY = "nemotron:kubernetes:Gateway"
    CLUSTER_AUTOSCALER = "nemotron:aws:ClusterAutoscaler"
    MONITORING = "nemotron:kubernetes:Monitoring"


# Type tokens a component had before; each is an alias, so an existing stack keeps its resources.
FORMER_TYPE_TOKENS = MappingProxyType({TypeTokens.DEVICE_PLUGINS: ("nemotron:aws:DevicePlugins",)})

# The label a Prometheus selects its ServiceMonitors, PodMonitors and rules by (kube-prometheus-stack's
# `release`): on the monitoring objects and on the operability canaries' PodMonitors.
RELEASE_LABEL = "release"
