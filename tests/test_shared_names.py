"""The policy pack runs outside this repository (CrossGuard loads `policy/` alone), so it keeps copies of
the names it shares with the stack in `policy/nemotron_policies/names.py`; each copy equals the stack's."""

from __future__ import annotations

import pytest

import serving_stack.names as stack
from policy.nemotron_policies import names as pack
from serving_stack.facts.catalog import load_platform

SAME = {  # pack name -> the stack's value
    "LABEL_PREFIX": stack.LABEL_PREFIX,
    "POOL_LABEL": stack.POOL_LABEL,
    "FABRIC_LABEL": stack.FABRIC_LABEL,
    "EFA_PER_GPU_LABEL": stack.EFA_PER_GPU_LABEL,
    "GPU_LABEL": stack.GPU_LABEL,
    "FABRIC_OUT_OF_BAND_LABEL": stack.FABRIC_OUT_OF_BAND_LABEL,
    "GPU_PRODUCT_LABEL": stack.GPU_PRODUCT_LABEL,
    "GPU_TAINT_KEY": stack.GPU_TAINT["key"],
    "GPU": stack.GPU_RESOURCE,
    "EFA": stack.EFA_RESOURCE,
    "INFINIBAND": stack.INFINIBAND_RESOURCE,
    "MODEL_CACHE_CLAIM": stack.MODEL_CACHE_CLAIM,
    "PREWARM_ENVS": (stack.PREWARM_MODELS_ENV,),
    "COMPILE_CACHE_ENVS": tuple(v.name for v in load_platform().compileCache.variables),
    "DEVICE_PLUGINS_COMPONENT": stack.TypeTokens.DEVICE_PLUGINS,
    "GPU_NODE_POOL_COMPONENT": stack.TypeTokens.GPU_NODE_POOL,
    "MODEL_PREWARM_COMPONENT": stack.TypeTokens.MODEL_PREWARM,
    "GATEWAY_COMPONENT": stack.TypeTokens.GATEWAY,
    "SERVING_NAMESPACE_COMPONENT": stack.TypeTokens.SERVING_NAMESPACE,
}


@pytest.mark.parametrize("name", sorted(SAME))
def test_the_packs_copy_equals_the_stacks(name):
    assert getattr(pack, name) == SAME[name]


def test_every_public_name_of_the_pack_is_checked():
    public = {n for n in vars(pack) if n.isupper()}
    assert public <= set(SAME) | {"SPECULATIVE_ENV"}, public - set(SAME)  # SPECULATIVE_ENV: upstream's name
