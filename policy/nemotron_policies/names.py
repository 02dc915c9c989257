"""The pack's copies of names the stack defines: node labels, the GPU taint, the model-cache claim, the
prewarm env contract, the compilation caches' variables and the type tokens of the stack's components.

The pack runs under CrossGuard outside the stack's repository, so it cannot import the stack. Every name
it shares with the stack lives here and only here, so one test can hold these copies equal to the stack's
shared-names module.
"""

from __future__ import annotations

# Node labels of GPU pools (the stack's node-group labels; placement pins workers on them).
LABEL_PREFIX = "nemotron.nvidia.com"
POOL_LABEL = f"{LABEL_PREFIX}/pool"
FABRIC_LABEL = f"{LABEL_PREFIX}/fabric"
EFA_PER_GPU_LABEL = f"{LABEL_PREFIX}/efa-per-gpu"
GPU_LABEL = f"{LABEL_PREFIX}/gpu"
# Set on the nodes of a pool whose KV-transfer fabric is provided outside Kubernetes resources (GB200
# multi-node NVLink through IMEX, host-level RDMA): its value names the mechanism.
FABRIC_OUT_OF_BAND_LABEL = f"{LABEL_PREFIX}/fabric-out-of-band"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_TAINT_KEY = "nvidia.com/gpu"

# Extended resources.
GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
INFINIBAND = "rdma/ib"

# The model cache and its prewarm contract.
MODEL_CACHE_CLAIM = "shared-model-cache"
PREWARM_ENVS = ("PREWARM_MODELS",)
SPECULATIVE_ENV = "SPECULATIVE_CONFIG"
# The compilation caches' variables (catalog/platform.yaml `compileCache`).
COMPILE_CACHE_ENVS = (
    "VLLM_CACHE_ROOT",
    "TRITON_CACHE_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "FLASHINFER_WORKSPACE_BASE",
    "CUDA_CACHE_PATH",
    "TORCH_EXTENSIONS_DIR",
)

# Type tokens of the stack's components.
DEVICE_PLUGINS_COMPONENT = "nemotron:kubernetes:DevicePlugins"
GPU_NODE_POOL_COMPONENT = "nemotron:aws:GpuNodePool"
MODEL_PREWARM_COMPONENT = "nemotron:kubernetes:ModelPrewarm"
GATEWAY_COMPONENT = "nemotron:kubernetes:Gateway"
SERVING_NAMESPACE_COMPONENT = "nemotron:kubernetes:ServingNamespace"
